"""Emulated BMCs: one Redfish service per emulated node, on loopback, driven by the Emulator.

``resources`` (pure: the Redfish documents, error bodies and what a reset does in each power
state), ``app`` (one node's BMC as a FastAPI app), ``fleet`` (every node's BMC on a free port, and
the published addresses).
"""
