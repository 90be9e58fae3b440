"""fakesmi's public surface: what the products may import. The acceptance bench installs one executable per
GPU tool that runs :func:`main` (``main(argv, prog="nvidia-smi")``) against an emulated node's files."""

from __future__ import annotations

from joulie_fakesmi.cli import main

__all__ = ["main"]
