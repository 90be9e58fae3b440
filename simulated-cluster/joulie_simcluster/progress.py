"""The progress lines every long command prints (``[  12.3s] message``): one printer, passed down, so
a smoke run can send the same lines to stdout and its smoke.log."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import TextIO


@dataclass
class Progress:
    out: TextIO = field(default_factory=lambda: sys.stdout)
    started: float = field(default_factory=time.monotonic)

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def __call__(self, msg: str) -> None:
        print(f"[{self.elapsed():6.1f}s] {msg}", file=self.out, flush=True)
