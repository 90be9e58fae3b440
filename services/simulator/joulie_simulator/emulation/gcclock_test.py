import gc
import threading

from joulie_simulator.emulation.gcclock import GcClock


def _cycles(n: int) -> None:
    for _ in range(n):
        a: list[object] = []
        a.append(a)


def test_it_counts_the_collections_on_its_own_thread_and_their_cpu() -> None:
    with GcClock() as clock:
        _cycles(1000)
        gc.collect()
        assert clock.collections[2] >= 1
        assert clock.take() > 0.0
        assert clock.take() == 0.0  # taken: the next tick starts from nothing
    assert clock._callback not in gc.callbacks


def test_a_collection_on_another_thread_is_not_this_threads() -> None:
    with GcClock() as clock:
        t = threading.Thread(target=gc.collect)
        t.start()
        t.join()
        assert clock.collections == [0, 0, 0] and clock.take() == 0.0
