"""joulie_testinfra: pytest-only support: the session fixtures over the local cluster
(``fixtures``: control plane with the CRDs, KWOK, kube-scheduler, Prometheus 3, all from
``joulie_localcluster``), polling for a condition (``waiting``), the fuzzing strategies of the
user-file loaders (``fuzzing``) and the shared ``--version`` check (``versioncheck``).

Nothing that runs outside a test imports it: the simulated cluster's runtime is ``joulie_localcluster``.
"""
