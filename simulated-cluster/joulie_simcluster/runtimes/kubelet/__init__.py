"""The kubelet runtime: the process runtime's real control plane plus one real kubelet node on
containerd, the chart installed with helm (simulated-cluster/KUBELET.md).

Pure, the node as data (no process, no host file read):
``node``             the node's paths, settings, address, release and namespace; :class:`KubeletFailure`
``containerd_config``  containerd's configuration and argv, the CNI network list
``node_config``      the KubeletConfiguration, the kubelet's and kube-proxy's argv, the node kubeconfig
``host_checks``      what keeps a host from running the node (root, binaries, cgroups, capabilities)
``chart_values``     the chart's values for this runtime, the fakesmi wrapper, a Pod's process name

Shells, each one concern of the host:
``host``             host checks read, the bootstrap's node tools, the node's address, mounts
``credentials``      the node's client certificate
``images``           image archives without a registry or Docker
``containerd``       ``ctr``: images imported, the node's containers removed
``node_processes``   the node lifecycle controller, kube-proxy, a process group's memory
``chart``            ``helm upgrade --install``, the Pods and host processes deploy.env records
``podlogs``          the Pods' logs kept at ``down`` (into logs/ and the run's logs/)
``up``, ``down``     the composition roots; ``runtime`` the :class:`~joulie_simcluster.runtimes.runtime.Runtime`
"""
