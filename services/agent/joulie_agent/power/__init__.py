"""Measured power: watts from energy counters and the samples the power export sends. Pure."""
