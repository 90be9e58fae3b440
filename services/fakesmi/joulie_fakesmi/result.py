"""What a tool run produced: stdout, stderr and the exit status."""

from __future__ import annotations

from joulie_simhw.record import record


@record
class Result:
    code: int
    stdout: str = ""
    stderr: str = ""


def not_emulated(tool: str, what: str) -> Result:
    """Never invent output: say plainly what is not modelled."""
    return Result(2, stderr=f"fakesmi: {tool} {what} is not emulated\n")
