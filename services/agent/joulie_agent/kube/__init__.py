"""The agent's Kubernetes side: Node reads, NodeHardware and NodeTwin writes, the NodeTwin watch. Shell."""
