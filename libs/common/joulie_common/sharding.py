"""Pool sharding: which agent replica owns which node.

An agent in pool mode serves only the nodes its shard owns; the simulated cluster uses the same
rule to know which replica should have written a node's status. One rule, here, so the two
cannot drift.
"""

from __future__ import annotations


def fnv1a32(s: str) -> int:
    """FNV-1a, 32 bit, over the UTF-8 bytes (the Go original's hash/fnv New32a)."""
    h = 0x811C9DC5
    for b in s.encode():
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def owns_node(node: str, shards: int, shard_id: int) -> bool:
    """A node belongs to replica FNV-1a-32(name) mod shards; with one shard (or none) to everyone."""
    return shards <= 1 or fnv1a32(node) % shards == shard_id
