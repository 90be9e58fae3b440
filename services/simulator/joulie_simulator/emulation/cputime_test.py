"""The emulated kubelet's cAdvisor counters and their exposition."""

from __future__ import annotations

import re

import pytest

from joulie_simulator.emulation.cputime import CpuTime, exposition
from joulie_simulator.physics.model import CpuJob


def _samples(text: str) -> dict[tuple[str, str, str, str], float]:
    """The samples of the exposition (this layer imports no Prometheus library; the serving tests parse it
    with prometheus_client)."""
    out: dict[tuple[str, str, str, str], float] = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = re.fullmatch(r"container_cpu_usage_seconds_total\{(.*)\} (\S+)", line)
        assert m, line
        labels = {
            k: v.replace('\\"', '"').replace("\\\\", "\\") for k, v in re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m[1])
        }
        out[(labels["node"], labels["namespace"], labels["pod"], labels["container"])] = float(m[2])
    return out


def test_cpu_time_counts_busy_cores_over_the_ticks_and_forgets_stopped_containers() -> None:
    t = CpuTime()
    two = (CpuJob("ns", "p", "a", 1.5), CpuJob("ns", "p", "b", 0.5))
    t.advance("n", two, 2.0)
    t.advance("n", two, 2.0)
    got = _samples(exposition(t.snapshot()))
    assert got[("n", "ns", "p", "a")] == pytest.approx(6.0) and got[("n", "ns", "p", "b")] == pytest.approx(2.0)
    assert got[("n", "ns", "p", "")] == pytest.approx(8.0)  # the Pod's cgroup: its containers' sum
    t.advance("n", two[:1], 1.0)
    assert ("n", "ns", "p", "b") not in _samples(exposition(t.snapshot()))
    t.forget("n")
    assert _samples(exposition(t.snapshot())) == {}


def test_labels_with_quotes_survive_the_exposition() -> None:
    t = CpuTime()
    t.advance("n", (CpuJob("ns", 'we"ird', "c\\x", 1.0),), 1.0)
    assert _samples(exposition(t.snapshot())) == {("n", "ns", 'we"ird', "c\\x"): 1.0, ("n", "ns", 'we"ird', ""): 1.0}
