"""joulie-simulator: emulated bare-metal hardware (per-node sysfs trees, physics on one tick, FUSE views, OTLP truth), the workload simulator and the gRPC API the simcluster harness drives."""
