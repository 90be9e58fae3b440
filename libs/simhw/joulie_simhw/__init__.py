"""On-disk formats of emulated hardware that more than one service reads."""
