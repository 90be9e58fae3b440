"""Code more than one service, tool or harness needs, one home each (see the module docstrings)."""
