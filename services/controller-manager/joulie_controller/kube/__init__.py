"""The Kubernetes shell: the cluster read into a Snapshot and the writes carried out (kube), Lease
leader election (leader) and the agent liveness check (liveness)."""
