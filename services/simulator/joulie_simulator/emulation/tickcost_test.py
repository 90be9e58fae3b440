from joulie_simulator.emulation.tickcost import TickCost


def test_summary_keeps_the_window_and_the_worst_since_start() -> None:
    tc = TickCost(window=4)
    for ms in (500.0, 10.0, 20.0, 30.0, 40.0):
        tc.record(ms, ms / 2)
    s = tc.summary()
    assert s["ticks"] == 5 and s["window"] == 4
    assert s["wallMs"] == {"median": 25.0, "p99": 40.0, "max": 40.0}
    assert s["cpuMs"]["median"] == 12.5
    assert s["maxWallMsSinceStart"] == 500.0 and s["maxCpuMsSinceStart"] == 250.0
    assert "wall median 25 ms" in tc.line()


def test_an_empty_window_reads_zero() -> None:
    assert TickCost().summary()["wallMs"] == {"median": 0.0, "p99": 0.0, "max": 0.0}
