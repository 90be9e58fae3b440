"""joulie-fakesmi: stands in for nvidia-smi, rocm-smi and amd-smi on emulated nodes, answering from the simulator's GPU state."""
