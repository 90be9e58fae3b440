"""The emulator: every node's tree as data, stepped on one tick, read and written by path (pure).

- ``emulator``: all nodes, faults, power states, events and the truth;
- ``render``: a node's tree (paths, owners, contents); ``writes``: what a write to it does, with
  the kernel's semantics; ``golden``: the render goldens (``testdata/render``);
- ``spec``: the node spec (which nodes, which profiles); ``hwsemconv``: the truth in the hardware
  semantic conventions' names; ``tickcost``: the cost of a tick, as measured.
"""
