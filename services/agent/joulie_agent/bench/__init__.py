"""Benchmarks, not tests: the reconcile's and the power export's cost (./pants run services/agent:bench)."""
