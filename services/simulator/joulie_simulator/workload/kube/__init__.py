"""The workload runner's Kubernetes shell: a trace's jobs as Pods, their loads set on the emulator
over gRPC, progress from the pure ``workload.engine``."""
