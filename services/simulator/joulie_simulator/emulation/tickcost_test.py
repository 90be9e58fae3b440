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


def test_the_line_says_where_the_ticks_cpu_went_by_part() -> None:
    tc = TickCost(window=3)
    for physics, files in ((5.0, 90.0), (6.0, 70.0), (7.0, 80.0), (8.0, 60.0)):
        tc.record(200.0, physics + files, {"physics": physics, "files": files})
    assert tc.summary()["cpuMsByPart"] == {"physics": 7.0, "files": 70.0}  # medians over the last three ticks
    assert "; cpu ms by part (median): physics 7, files 70; worst cpu tick #1: 95 ms (physics 5, files 90, gc 0)" in tc.line()
    assert "by part" not in TickCost().line()


def test_the_worst_cpu_tick_keeps_its_parts_and_the_collectors_share() -> None:
    tc = TickCost(window=2)
    tc.record(60.0, 55.0, {"physics": 20.0, "ledgers": 35.0}, gc_ms=0.0)
    tc.record(1300.0, 1206.0, {"physics": 1150.0, "ledgers": 56.0}, gc_ms=1100.0)
    for _ in range(3):  # the worst tick leaves the window, not the summary
        tc.record(60.0, 50.0, {"physics": 20.0, "ledgers": 30.0}, gc_ms=1.0)
    s = tc.summary()
    assert s["worstCpuTick"] == {"tick": 2, "cpuMs": 1206.0, "wallMs": 1300.0,
                                 "cpuMsByPart": {"physics": 1150.0, "ledgers": 56.0}, "gcMs": 1100.0}
    assert s["gcMs"]["max"] == 1.0 and s["cpuMs"]["max"] == 50.0
    assert tc.line().endswith("; gc cpu median 1 ms, max 1 ms; worst cpu tick #2: 1206 ms (physics 1150, ledgers 56, gc 1100)")
    assert "worstCpuTick" not in TickCost().summary()
