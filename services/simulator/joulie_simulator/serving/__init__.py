"""The servers that publish the truth and take commands (shells: sockets, HTTP, gRPC, OTLP).

- ``http_debug``: ``/debug/emulate``, ``/debug/power``, ``/debug/bmcs`` and ``/metrics``;
- ``grpc_api``: the gRPC API the simcluster harness and the workload runner drive;
- ``otlp``: the OTLP metrics pusher and the ``joulie.sim.*`` event exporter.
"""
