"""simcluster: the simulated cluster harness behind ``./simcluster`` (simulated-cluster/README.md,
"Layout", says which module holds what). ``cli.py`` parses and dispatches; ``settings.py`` reads every
SIMCLUSTER_* variable once; ``runtimes/`` starts the cluster, ``deploy/`` the components, ``smoke/``
checks them.
"""
