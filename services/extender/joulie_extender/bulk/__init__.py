"""One request's answers for all candidate nodes at once, on numpy columns. Pure: no I/O.

columns.py holds the cached node state as columns, kernels.py filters and scores them with array
operations (equal to ../rules per node), decisions.py answers a filter or prioritize request."""
