"""Where the cluster runs: the runtimes under ``up``, ``status`` and ``down``.

``runtime``  the :class:`Runtime` protocol every runtime implements (up, status, down, release after a
             run, what it supports) and the cluster.env key that records which one is up
``registry`` the runtimes by name, chosen once (``runtime_for``, ``smoke_runtime``, ``recorded_runtime``)
``kube``     the Kubernetes calls every runtime (and deploy, and the smoke) shares: GET through the
             admin kubeconfig, readiness, Nodes, and applying the spec's fake Nodes
``pids``     processes by PID (alive, start time, stop its group)
``process``  the default runtime: etcd, kube-apiserver, kube-scheduler, KWOK, Prometheus (and the
             Collector of some telemetry modes) as local processes on 127.0.0.1
``k3s``      the seed's runtime: one privileged k3s container (simulated-cluster/K3S.md), driven
             through the docker CLI; ``k3s_config`` that container as data (pin, capacity, argv)
``kubelet/`` the process runtime's control plane plus one real kubelet node on containerd, the chart
             installed with helm (simulated-cluster/KUBELET.md); its package docstring lists the node
             as data (pure) and the shells
"""
