"""Reading and writing the node's host: sysfs and /proc files, its GPU tools and NVML. Shell."""
