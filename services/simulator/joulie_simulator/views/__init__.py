"""How agents reach the emulated trees (shells: files, descriptors, FUSE).

- ``files``: the trees on disk, synchronised with the emulator once per tick (files mode; in FUSE
  mode, the persisted ledgers and writes);
- ``fuse``: the trees served by FUSE straight from the emulator.
"""
