"""``simcluster chaos``: faults injected at random (seeded) moments into a live, deployed cluster
under its running workload, and what each did: survived, writes lost, drift, restarts, Pods, time
to recover (``run.py``); the catalogue of faults (``catalogue.py``), how each is injected
(``inject.py``), how the cluster is looked at (``observe.py``), the table and report (``report.py``)."""
