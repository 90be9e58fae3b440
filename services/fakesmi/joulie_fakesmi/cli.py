"""Command line of joulie-fakesmi: one program behind nvidia-smi, rocm-smi and amd-smi.

The tool is ``basename(argv[0])`` (a link named ``nvidia-smi``), or ``argv[1]`` when called as
``fakesmi``/``joulie-fakesmi``. Before running, fakesmi checks what the real tool needs: it must be
listed in the node's ``state/tools.json`` (else exit 127, as an absent binary), and each file it
``requires`` (ELF loader, C libraries, NVML, a script's interpreter) must exist under
``HWEMU_HOST_ROOT``, else it fails as the real tool would on such a node.
"""

from __future__ import annotations

import os
import sys
import time

from joulie_fakesmi.node import NodeView
from joulie_fakesmi.result import Result
from joulie_simhw.gpustate import FAULT_GPU_TOOL_FAILURE, FAULT_GPU_TOOL_HANG

# What this program imports is paid at every GPU tool call an agent makes (joulie_simhw.record says
# how much): annotations only here.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

NAME = "joulie-fakesmi"
TOOLS = ("nvidia-smi", "rocm-smi", "amd-smi", "dcgmi")
USAGE = "usage: fakesmi nvidia-smi|rocm-smi|amd-smi|dcgmi [ARG ...]\n"
HANG_MAX_S = 600.0
"""The longest an injected hang lasts when nobody clears it (a wedged call that never returns
would outlive the harness); the caller's timeout normally ends it long before."""
HANG_POLL_S = 0.5


def run_tool(tool: str, args: list[str], node: NodeView, sleep: Callable[[float], None] = time.sleep) -> Result:
    manifest = node.tools()
    if manifest is None or tool not in manifest.tools:
        return Result(127, stderr=f"fakesmi: {tool} is not installed on this emulated node\n")
    missing = node.missing_requirement(manifest.requires.get(tool, ()))
    if missing is not None:
        if "libnvidia-ml" in missing:
            from joulie_fakesmi import nvidia_smi

            return Result(12, stdout=nvidia_smi.NO_NVML)
        if "python" in os.path.basename(missing):
            return Result(127, stderr=f"/usr/bin/env: '{os.path.basename(missing)}': No such file or directory\n")
        return Result(127, stderr=f"{tool}: cannot execute: required file not found\n")
    _hang_while_injected(node, sleep)
    if FAULT_GPU_TOOL_FAILURE in node.faults():
        return _tool_failure(tool, node)
    variant = manifest.tools[tool]
    # Each tool's module is imported when it runs: an agent starts this program for every GPU tool
    # call (several a second at 1000 Nodes), and importing the other three cost each call ~10 ms.
    if tool == "dcgmi":
        from joulie_fakesmi import dcgmi

        if variant != "default":
            return Result(2, stderr=f"fakesmi: dcgmi variant {variant!r} is unknown\n")
        return dcgmi.run(args, node)
    if tool == "nvidia-smi":
        from joulie_fakesmi import nvidia_smi

        if variant != "default":
            return Result(2, stderr=f"fakesmi: nvidia-smi variant {variant!r} is unknown\n")
        return nvidia_smi.run(args, node)
    if tool == "rocm-smi":
        from joulie_fakesmi import rocm_smi

        if variant not in ("current", "legacy-agent-contract"):
            return Result(2, stderr=f"fakesmi: rocm-smi variant {variant!r} is unknown\n")
        return rocm_smi.run(args, node, variant)
    from joulie_fakesmi import amd_smi

    if variant not in ("7.1", "7.2"):
        return Result(2, stderr=f"fakesmi: amd-smi variant {variant!r} is unknown\n")
    return amd_smi.run(args, node, variant)


def _hang_while_injected(node: NodeView, sleep: Callable[[float], None]) -> None:
    """The harness injected a hang: block, as a call into a wedged driver does, until the fault is
    cleared (then answer as usual) or HANG_MAX_S passed."""
    waited_s = 0.0
    while FAULT_GPU_TOOL_HANG in node.faults() and waited_s < HANG_MAX_S:
        sleep(HANG_POLL_S)
        waited_s += HANG_POLL_S


def _tool_failure(tool: str, node: NodeView) -> Result:
    """The harness injected a GPU tool failure: answer as the tool does when the driver errors."""
    state = node.gpus()
    bus = state.gpus[0].pci_bus_id if state and state.gpus else "00000000:10:00.0"
    if tool == "nvidia-smi":
        return Result(255, stdout=f"Unable to determine the device handle for GPU {bus}: Unknown Error\n")
    if tool == "dcgmi":
        return Result(255, stdout="Error: Unable to get field values. Return: Unknown Error\n")
    if tool == "rocm-smi":
        return Result(1, stderr="ERROR:root:rsmi_status_t RSMI_STATUS_UNKNOWN_ERROR: an unknown error occurred\n")
    return Result(1, stdout="amdsmi_cli_exceptions.AmdSmiLibraryException: An unknown error occurred. Error code: -1\n")


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """``argv`` excludes the program name; ``prog`` is how fakesmi was called (default ``sys.argv[0]``)."""
    args = list(sys.argv[1:] if argv is None else argv)
    tool = os.path.basename(prog if prog is not None else (sys.argv[0] if argv is None else "fakesmi"))
    if tool not in TOOLS:
        if args and args[0] == "--version":
            # Imported here: joulie_api's package imports the pydantic API types (~250 ms), and the
            # agents start this program for every GPU tool call (argparse too: ~10 ms a call).
            import argparse

            from joulie_api.version import service_version

            parser = argparse.ArgumentParser(prog=NAME)
            parser.add_argument("--version", action="version", version=f"{NAME} {service_version(__package__ or 'joulie_fakesmi')}")
            parser.parse_args(args[:1])
        if not args or args[0] not in TOOLS:
            sys.stderr.write(USAGE)
            return 2
        tool, args = args[0], args[1:]
    result = run_tool(tool, args, NodeView.from_env())
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    return result.code


if __name__ == "__main__":
    sys.exit(main())
