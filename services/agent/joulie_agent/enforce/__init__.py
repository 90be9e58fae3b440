"""One node's control loop: discovery, then CPU and GPU cap enforcement on its host. Shell."""
