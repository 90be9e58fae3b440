"""joulie_testinfra: the real Kubernetes control plane, KWOK and Prometheus 3 on loopback, for tests.

Binaries come from ci/tools/bootstrap-tools.sh (pinned in versions.env, cached under
~/.cache/joulie/bin). Every process listens on 127.0.0.1 only, logs to a file, and is stopped by
its PID at teardown; on a failure the logs are printed.
"""
