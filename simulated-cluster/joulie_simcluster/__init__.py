"""simcluster: the simulated cluster harness (issue 8). Pure groundwork so far: the cluster spec
(``spec.py``), the fake Node objects it implies (``nodes.py``), which Nodes the agent DaemonSet
would reach (``agents.py``) and the ``render-nodes`` / ``agents`` CLI (``cli.py``).
"""
