"""Redfish for Joulie: power state, ``ComputerSystem.Reset`` and power readings of a node's BMC.

``errors`` (the one error type, with a message that names the BMC and never a secret),
``directory`` (pure: which BMC belongs to which node, and its credentials, from Secrets),
``client`` (the shell over sushy: connect, read, reset), ``kube`` (reading the Secrets).
"""
