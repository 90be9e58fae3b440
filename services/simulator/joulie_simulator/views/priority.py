"""The simulator's scheduling priority: it stands for hardware, and a kernel answers a sysfs read at
once, not after the processes that make it.

In FUSE mode every sysfs read of every agent is a few requests that one Python thread of this
process serves, each a wake-up. On a saturated machine (1000 Nodes, 40 pool agents, 2 cores) that
thread spent 61-66 % of its time runnable but waiting for a CPU (``/proc/<pid>/task/<tid>/schedstat``),
~0.45 ms a wake-up, even at nice -10: a file read took 68-76 ms (median) and the agents' discovery of
1000 Nodes ran 25 Nodes a minute. Under ``SCHED_RR`` the same thread waited 0.2 % of its time, a read
took 7 ms and discovery ran twice as fast, in the same run. The real-time class is for that
thread alone: it sleeps between requests, and the kernel's real-time throttling
(``sched_rt_runtime_us``) keeps a share of every CPU for the rest.

Both need root or CAP_SYS_NICE; without it the priority stays and a line says so."""
from __future__ import annotations

import os

DEFAULT_NICE = -10
DEFAULT_RT_PRIORITY = 1


def raise_priority(nice: int) -> str:
    """Set this thread's nice value (threads started after it inherit it: call before starting any);
    a line saying what was done, or why not. ``nice`` not below the current value changes nothing."""
    before = os.getpriority(os.PRIO_PROCESS, 0)
    if nice >= before:
        return f"scheduling priority left at nice {before} (--nice {nice})"
    try:
        # Linux: PRIO_PROCESS with 0 names the calling thread; the threads it starts inherit it.
        os.setpriority(os.PRIO_PROCESS, 0, nice)
    except PermissionError:
        return (f"scheduling priority left at nice {before}: raising it to {nice} needs root or CAP_SYS_NICE "
                "(on a saturated machine the emulator then runs behind the agents)")
    return f"scheduling priority nice {nice} (the emulator runs ahead of the processes under test)"


def serve_in_real_time(priority: int, what: str) -> str:
    """Put the calling thread (only) in the round-robin real-time class at ``priority`` (0: leave it);
    a line saying what was done, or why not."""
    if priority <= 0:
        return f"{what}: normal scheduling (real-time priority 0)"
    try:
        os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(priority))
    except PermissionError:
        return (f"{what}: normal scheduling: SCHED_RR needs root or CAP_SYS_NICE (on a saturated machine "
                "reads then wait for a CPU behind the agents that make them)")
    except OSError as err:  # a kernel without real-time scheduling for this group (cgroup rt budget 0)
        return f"{what}: normal scheduling: SCHED_RR refused ({err.strerror})"
    return f"{what}: SCHED_RR priority {priority} (answers reads without waiting behind the agents)"
