"""Acceptance tests: the real agent reconciling against the real emulator (files mode, frozen clock),
fakesmi standing in for the GPU tools (reference joulie-node-sim.md §2.4, scenarios A03-A16).

Run: ``./pants test ci::``. ``harness.py`` is the bench; ``emulated_node_test.py`` the scenarios.
"""
