"""kubectl-joulie: the cluster's energy state from NodeTwin, NodeHardware and Pods."""
