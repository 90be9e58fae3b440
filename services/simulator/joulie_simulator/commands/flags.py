"""Flag types the subcommands share: durations in the project's one settings grammar
(``joulie_common.settingsgrammar``), so that ``--tick 500ms`` reads as ``500ms`` does in every
Joulie setting; a bare number is still seconds."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from joulie_common.settingsgrammar import SettingError, parse_duration


def duration(flag: str, *, allow_zero: bool = True) -> Callable[[str], float]:
    """An argparse ``type``: seconds from ``500ms``, ``90s``, ``2m``, ``1h30m`` or a bare number;
    a refusal is argparse's usage error naming the flag and the value."""

    def parse(raw: str) -> float:
        try:
            return parse_duration(flag, raw, allow_zero=allow_zero)
        except SettingError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    parse.__name__ = "duration"  # argparse names the type in its own messages
    return parse
