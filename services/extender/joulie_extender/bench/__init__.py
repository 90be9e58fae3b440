"""Load generators, not part of the service binary: the extender on loopback (loopback.py) and the real
kube-scheduler on KWOK nodes calling it (schedbench.py)."""
