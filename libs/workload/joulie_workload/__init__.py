"""Workload traces shared by the simulator, the simulated cluster and the benchmark: the trace
format (``trace``), workload kinds and their distributions (``kinds``), synthetic traces
(``gen``), traces from SWF logs (``extract``) and from the Alibaba GPU-cluster trace
(``alibaba``), long traces cut into benchmark units (``chunks``) and the Pod a job becomes
(``pods``). The engine that runs jobs stays in the simulator."""
