"""The physics of emulated hardware (pure: no I/O, time is an argument).

- ``model``: a node's state (load, sockets, GPUs, policies, ledgers) and its start;
- ``node``: one node stepped by one tick (settling limits, powers, the energy ledgers);
- ``cpu``, ``gpu``, ``speed``: the device models (a package under RAPL/HSMP, a board under a power
  limit and an SM clock lock running serving phases, work done at a clock), formulas in each docstring;
- ``curve``, ``calibration``, ``calibration_serving``, ``cited``: performance versus cap and clock
  lock per workload kind, the published data points the device models are fitted and checked
  against (docs/physics-calibration.md), and the points the ``curve`` plots draw.
"""
