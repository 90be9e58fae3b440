"""Where the cluster runs: the runtimes under ``up``, ``status`` and ``down``.

``kube``     the Kubernetes calls every runtime (and deploy, and the smoke) shares: GET through the
             admin kubeconfig, readiness, Nodes, and applying the spec's fake Nodes
``pids``     processes by PID (alive, start time, stop its group)
``process``  the default runtime: etcd, kube-apiserver, kube-scheduler, KWOK, Prometheus (and the
             Collector of some telemetry modes) as local processes on 127.0.0.1
``k3s``      the seed's runtime: one privileged k3s container (simulated-cluster/K3S.md), driven
             through the docker CLI; ``k3s_config`` that container as data (pin, capacity, argv)
``kubelet``  the process runtime's control plane plus one real kubelet node on containerd, the chart
             installed with helm (simulated-cluster/KUBELET.md); ``kubelet_config`` the node as data
             (paths, configs, argv, host checks, chart values), ``kubelet_images`` image archives
             without a registry or Docker
"""
