"""``simcluster scenario FILE``: timed steps (load, policy, ambient, fault, wait, assert) on the live
simulated cluster, written to the smoke's ``runs/`` layout with a timeline. ``schema`` and
``conditions`` are pure; ``observe``, ``faults`` and ``run`` are the shell; ``plot`` draws."""
