"""What the agent measures and tells: Prometheus metrics, the OTLP power export and its BMC reader. Shell."""
