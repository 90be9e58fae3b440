"""Emulated BMCs: one Redfish service per emulated node, on loopback, driven by the Emulator.

``resources`` (pure: the Redfish documents, error bodies and what a reset does in each power
state); the shell ``serving``: ``serving.app`` (one node's BMC as a FastAPI app),
``serving.fleet`` (every node's BMC on a free port, and the published addresses).
"""
