"""What the node has: parsers of its files and tools' output, the hardware catalog, and the NodeHardware status built from them. Pure."""
