"""The policies: how many nodes run performance, which ones, and with what caps. Pure: no I/O.

One module per policy (``static``, ``queueaware``, ``ruleswap``, ``powerbudget``, ``workaware``), what
they share in ``plan``, and ``registry`` mapping each POLICY_TYPE to its policy."""
