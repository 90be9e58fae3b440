"""The subcommands of ``joulie-simulator`` (shells: flags, files, processes), dispatched by ``cli``.

- ``emulate``: the composition root (emulator, views, servers, BMCs, the tick loop);
- ``curve``: performance versus cap and clock lock (over ``physics.curve``; its plot: ``curveplot``);
- ``workload``: ``workload``, ``workloadgen``, ``traceextract``;
- ``bench``: the tick-cost benchmark (``./pants run services/simulator:bench-tick``).
"""
