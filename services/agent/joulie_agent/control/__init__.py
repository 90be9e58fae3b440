"""Cap decisions (RAPL, DVFS, GPU limits) and what a reconcile reports about them. Pure."""
