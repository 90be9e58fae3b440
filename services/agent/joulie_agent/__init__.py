"""joulie-agent: discovers CPU and GPU power hardware, publishes NodeHardware, enforces the CPU and GPU caps in NodeTwin.spec and reports NodeTwin.status.controlStatus."""
