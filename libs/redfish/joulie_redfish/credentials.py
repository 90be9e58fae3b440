"""A BMC login: the user name, and a password that no ``repr`` or log line shows."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Credentials:
    username: str
    password: str = field(repr=False)
