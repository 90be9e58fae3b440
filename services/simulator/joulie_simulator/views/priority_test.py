import os
import subprocess
import sys
import textwrap

from joulie_simulator.views.priority import raise_priority, serve_in_real_time


def _in_child(code: str) -> str:
    """Run ``code`` in a fresh interpreter (a nice value, once raised, cannot be lowered back here)."""
    # The child finds this package where the test runner put it (a Pants sandbox sets no PYTHONPATH).
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    return out.stdout


def test_threads_started_after_inherit_the_raised_priority_or_the_reason_is_said() -> None:
    out = _in_child("""
        import os, threading
        from joulie_simulator.views.priority import raise_priority
        before = os.getpriority(os.PRIO_PROCESS, 0)
        line = raise_priority(before - 3)
        seen = []
        t = threading.Thread(target=lambda: seen.append(os.getpriority(os.PRIO_PROCESS, 0)))
        t.start(); t.join()
        print(before, seen[0], line)
    """)
    before, thread_nice, line = out.split(" ", 2)
    if os.geteuid() == 0:
        assert int(thread_nice) == int(before) - 3
        assert "runs ahead of the processes under test" in line
    else:  # without the privilege the priority stays and the line names what it takes
        assert int(thread_nice) == int(before)
        assert "needs root or CAP_SYS_NICE" in line


def test_a_value_not_above_the_current_priority_changes_nothing() -> None:
    before = os.getpriority(os.PRIO_PROCESS, 0)
    assert raise_priority(before) == f"scheduling priority left at nice {before} (--nice {before})"
    assert os.getpriority(os.PRIO_PROCESS, 0) == before


def test_the_fuse_thread_goes_real_time_alone_or_says_why() -> None:
    out = _in_child("""
        import os, threading
        from joulie_simulator.views.priority import serve_in_real_time
        seen = {}
        def serve():
            seen["line"] = serve_in_real_time(1, "FUSE view")
            seen["policy"] = os.sched_getscheduler(0)
        t = threading.Thread(target=serve)
        t.start(); t.join()
        print(seen["policy"], os.sched_getscheduler(0), seen["line"])
    """)
    thread_policy, main_policy, line = out.split(" ", 2)
    assert int(main_policy) == os.SCHED_OTHER  # the rest of the process keeps normal scheduling
    if int(thread_policy) == os.SCHED_RR:
        assert "SCHED_RR priority 1" in line
    else:  # no privilege, or no real-time budget here: said, and the thread serves as before
        assert int(thread_policy) == os.SCHED_OTHER
        assert "normal scheduling: SCHED_RR" in line


def test_real_time_priority_zero_leaves_the_thread_alone() -> None:
    assert serve_in_real_time(0, "FUSE view") == "FUSE view: normal scheduling (real-time priority 0)"
    assert os.sched_getscheduler(0) == os.SCHED_OTHER
