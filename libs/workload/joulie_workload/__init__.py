"""Workload traces shared by the simulator, the simulated cluster and the benchmark: the trace
format (``trace``), synthetic traces (``gen``), traces from SWF logs (``extract``) and the Pod a
job becomes (``pods``). The engine that runs jobs stays in the simulator."""
