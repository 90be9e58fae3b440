"""The Prometheus shells: instant queries for node and facility power (prometheus) and the
controller's own /metrics (metrics)."""
