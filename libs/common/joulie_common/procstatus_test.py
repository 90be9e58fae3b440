import os
import subprocess
import sys

from joulie_common.procstatus import KIB_PER_MIB, rss_kib, status_kib


def test_this_process_resident_set_grows_with_what_it_holds() -> None:
    before = rss_kib()
    block = bytearray(64 * KIB_PER_MIB * 1024)  # 64 MiB, touched
    for i in range(0, len(block), 4096):
        block[i] = 1
    after = rss_kib()
    assert after - before >= 60 * KIB_PER_MIB
    peak = status_kib("VmHWM")
    assert peak is not None and peak >= after
    del block


def test_another_process_by_pid_and_a_gone_one() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; print('up', flush=True); time.sleep(30)"],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == "up\n"  # the interpreter is loaded
        assert rss_kib(child.pid) > 1000  # an interpreter holds megabytes
    finally:
        child.kill()
        child.wait()
    assert rss_kib(child.pid) == 0 and status_kib("VmRSS", child.pid) is None
    assert status_kib("NoSuchField") is None
    assert status_kib("VmRSS", os.getpid()) is not None
