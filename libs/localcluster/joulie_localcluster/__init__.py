"""joulie_localcluster: a real Kubernetes control plane, KWOK, kube-scheduler, Prometheus 3 and the
OpenTelemetry Collector as local processes on loopback.

The simulated cluster runs on it (its process and kubelet runtimes) and so do the tests (through
the pytest fixtures of ``joulie_testinfra``). Binaries come from ci/tools/bootstrap-tools.sh (pinned
in versions.env, cached under ~/.cache/joulie/bin, found by ``tools``). Every process listens on
127.0.0.1 only, logs to a file, and is stopped by its PID; on a failure the logs are printed.
"""
