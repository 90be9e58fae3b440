"""What Prometheus answers, read right: the PromQL for node power (promql) and the facility
(facility), the validation of their samples, whether rate() windows hold again after an outage
(ratewarmup), and the values read (values). Pure: the shell in telemetry/ sends the queries."""
