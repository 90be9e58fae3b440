"""dcgmi (DCGM's CLI), the part a node agent reads: ``dcgmi dmon -e <field ids> [-i <gpu ids>] -c <count>``.

Fields modelled: the profiling fields 1002 (SM active, ``SMACT``),
1004 (tensor pipe active, ``TENSO``) and 1005 (DRAM active, ``DRAMA``), each board's value
from the simulator's state (``gpus.json`` ``sm_active``, ``tensor_active``, ``dram_active``), ``N/A``
where the board has none. Output as dcgmi prints it: a ``#Entity`` header of the fields' short tags, an
``ID`` line, then one row per GPU (``GPU <id>``) per sample, values with three decimals. Real dcgmi
samples every ``-d`` ms (default 1000) for ``-c`` samples; the emulation answers each sample at once
from the current state. Without nv-hostengine (no state) it fails as dcgmi does (exit 255).
"""

from __future__ import annotations

from joulie_fakesmi.node import NodeView
from joulie_fakesmi.result import Result, not_emulated

TOOL = "dcgmi"
FIELDS = {"1002": ("SMACT", "sm_active"), "1004": ("TENSO", "tensor_active"), "1005": ("DRAMA", "dram_active")}
NO_HOSTENGINE = "Error: unable to establish a connection to the specified host: localhost\nError: Unable to connect to host engine. Host engine connection invalid/disconnected.\n"
MAX_COUNT = 100


def run(args: list[str], node: NodeView) -> Result:
    if not args or args[0] != "dmon":
        return not_emulated(TOOL, f"{args[0] if args else '(no subcommand)'} (only dmon)")
    fields: list[str] = []
    gpu_ids: list[int] | None = None
    count = 1
    i = 1
    while i < len(args):
        a, val = args[i], args[i + 1] if i + 1 < len(args) else None
        if a in ("-e", "--field-id") and val is not None:
            fields = [f.strip() for f in val.split(",") if f.strip()]
        elif a in ("-i", "--entity-id") and val is not None:
            if not all(p.strip().isdigit() for p in val.split(",")):
                return not_emulated(TOOL, f"dmon -i {val} (only GPU indices)")
            gpu_ids = [int(p) for p in val.split(",")]
        elif a in ("-c", "--count") and val is not None:
            if not val.isdigit() or not 1 <= int(val) <= MAX_COUNT:
                return Result(255, stderr=f"Error: invalid count {val!r}\n")
            count = int(val)
        elif a in ("-d", "--delay") and val is not None:
            pass  # the samples are answered at once
        else:
            return Result(255, stderr=f"Error: invalid argument {a!r}\n")
        i += 2
    if not fields:
        return Result(255, stderr="Error: dmon needs -e <field ids>\n")
    for f in fields:
        if f not in FIELDS:
            return not_emulated(TOOL, f"dmon field {f} (only 1002, 1004, 1005)")
    state = node.gpus()
    if state is None or state.vendor != "nvidia":
        return Result(255, stdout=NO_HOSTENGINE)
    gpus = [g for g in state.gpus if gpu_ids is None or g.index in gpu_ids]
    lines = ["#Entity   " + "".join(f"{FIELDS[f][0]:<13}" for f in fields).rstrip(), "ID"]
    for _ in range(count):
        for g in gpus:
            cells = []
            for f in fields:
                v = getattr(g, FIELDS[f][1])
                cells.append(f"{'N/A' if v is None else f'{v:.3f}':<13}")
            lines.append(f"GPU {g.index:<6}" + "".join(cells).rstrip())
    return Result(0, stdout="".join(line + "\n" for line in lines))
