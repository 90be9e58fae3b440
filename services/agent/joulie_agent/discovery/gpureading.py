"""One nvidia-smi query for everything the agent reads of its NVIDIA boards every few seconds. Pure.

Without NVML each GPU tool call is a process start (on the emulated nodes a Python program, 15-30 ms
of CPU). The power export used to start two nvidia-smi per node every 10 s (the power/inventory query
``gputools.NVIDIA_QUERY`` and the activity query ``gpuactivity.NVIDIA_ACTIVITY_QUERY``) and the cap
verification two more every minute (the inventory again and ``gputools.NVIDIA_ENFORCED_QUERY``); at
1000 Nodes the tools cost more CPU than the agents (issue 39). nvidia-smi answers any list of its
fields in one ``--query-gpu``, so one query asks them all: each board's power limits, draw and
enforced limit (the export's draw, the cap plan and its read-back) and its UUID, utilisation and SM
clocks (the activity report). Parsed once, it gives the same ``Inventory`` and ``ActivityReport`` the
separate queries gave, field for field.

``name`` is last: a model name may hold a comma, and the fields after the tenth are the name.
Discovery keeps ``NVIDIA_QUERY`` and ``NVIDIA_DEFAULT_QUERY``: the hardware corpus holds captures of
those exact queries from real machines.
"""

from __future__ import annotations

from dataclasses import dataclass

from joulie_agent.discovery.gpuactivity import ActivityReport, BoardActivity, activity_of
from joulie_agent.discovery.gputools import GPUDevice, Inventory, nvidia_rows, parse_watts

NVIDIA_READING_FIELDS = (
    "index", "power.min_limit", "power.max_limit", "power.limit", "power.draw", "enforced.power.limit",
    "uuid", "utilization.gpu", "clocks.sm", "clocks.max.sm", "name",
)
NVIDIA_READING_QUERY = ["nvidia-smi", f"--query-gpu={','.join(NVIDIA_READING_FIELDS)}", "--format=csv,noheader,nounits"]
_FIELDS = len(NVIDIA_READING_FIELDS)


@dataclass
class NvidiaReading:
    """The boards' inventory (with each enforced limit) and activity from one NVIDIA_READING_QUERY.

    ``inventory.warnings`` and ``activity.warnings`` both name each line that was not understood: the
    board of such a line is in neither."""

    inventory: Inventory
    activity: ActivityReport


def parse_nvidia_reading(text: str) -> NvidiaReading:
    """Rows of NVIDIA_READING_QUERY output. `[N/A]`, `[Not Supported]` and other tokens are unknown,
    never 0: a limit as in ``gputools.parse_nvidia_csv``, an enforced limit the board does not report
    leaves its requested limit standing in (``gpuverify``), an activity field as in
    ``gpuactivity.parse_nvidia_activity``."""
    inv = Inventory("nvidia", "nvidia-smi")
    boards: list[BoardActivity] = []
    warnings: list[str] = []
    for index, fields in nvidia_rows(text, _FIELDS, warnings):
        min_w, max_w, limit_w, draw_w, enforced_w = (parse_watts(f) for f in fields[1:6])
        inv.devices.append(GPUDevice(index=index, name=",".join(fields[10:]), min_w=min_w, max_w=max_w,
                                     current_cap_w=limit_w, draw_w=draw_w, enforced_w=enforced_w))
        boards.append(activity_of(index, *fields[6:10]))
    inv.warnings = list(warnings)
    return NvidiaReading(inv, ActivityReport(boards, list(warnings)))
