"""``simcluster deploy`` on the process runtime: the simulator, the extender, the controller manager,
one emulated agent per eligible Node and the workload runner (by default one pinned Pod per Node, the
smoke's load: :mod:`joulie_simcluster.smoke.load`; or a trace of the user's), as local processes that
outlive the CLI.

By concern, in the order a deploy runs them:

``binaries``    the released PEXes (``./pants package``) copied into ``<state>/bin`` under a name carrying
                the first 12 hex of their sha256 (the process runtime's image tag), so a reload can tell
                an unchanged binary from a new one
``values``      the install values (helm's merge of several files)
``daemonset``   the agent DaemonSet the install would create: which Nodes get an agent
``components``  what each component runs, as data: one command line and environment per process
``start``       :func:`start.deploy`: writes the plan's files, starts the processes, records binaries,
                ports and PIDs in ``deploy.env`` (a new deploy first stops what the last one started)
``processes``   the deployed processes by PID: alive, stop, strays, the FUSE view left behind
``reports``     whether each component reports: the simulator serves every Node on /debug/emulate, the
                extender answers /healthz, the controller manager serves /metrics and has written a
                NodeTwin for every managed Node, every agent serves /metrics and has published its
                NodeHardware, the workload runner serves /metrics
``reload``      restart a process with its recorded command (a new binary, a crash, new settings)
"""
