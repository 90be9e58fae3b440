"""``simcluster smoke``: the checks of the simulated cluster and the run results they leave.

``run``      the sequence: up, deploy, load, the checks in three steps, run results, down (the shell)
``results``  what a run leaves: the run directory's copies of the cluster, summary.json, runs/latest
``checks``   each check S01-S12 as a pure evaluation: what was read in, an Assertion out
``load``     the smoke's load as real Pods: one pinned workload job per Node, and the load it puts there
``summary``  ``summary.json`` and the harness's OTLP lines, pure

The README's table of checks is kept equal to ``checks.CHECKS`` by a test.
"""
