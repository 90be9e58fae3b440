"""Issue 23: trace files fuzzed (hypothesis). Any line either loads or is refused with a TraceError
naming the file, the line and the field; never a crash, never an interpreter hint."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from joulie_testinfra.fuzzing import (
    DELETE,
    ODD_VALUES,
    FuzzTally,
    clean,
    fuzz_report,
    fuzz_settings,
    paths,
    set_path,
    with_huge,
)
from joulie_workload.trace import TraceError, parse_lines

GOOD: dict[str, Any] = {"type": "job", "jobId": "a", "submitTimeOffsetSec": 3, "class": "eco", "workloadKind": "cpu-compute",
                        "requests": {"cpu": 4, "memory": "8Gi", "gpu": 0}, "work": {"cpuUnits": 40},
                        "utilization": {"cpu": 0.8}, "sensitivity": {"cpu": 1.0}, "nodeSelector": {"k": "v"}}
TALLY = FuzzTally("trace")

report = fuzz_report(TALLY.summary)


def _check(lines: list[str]) -> None:
    TALLY.tried["trace"] += 1
    try:
        parse_lines(lines, "t.jsonl")
    except TraceError as err:
        TALLY.refused["trace"] += 1
        msg = str(err)
        assert msg.startswith("t.jsonl:"), msg
        assert not clean(msg), msg


@fuzz_settings(400)
@given(st.sampled_from(paths(GOOD)), st.one_of(ODD_VALUES, st.just(DELETE)))
def test_a_job_with_one_field_broken(path: tuple[Any, ...], value: Any) -> None:
    line = with_huge(json.dumps(set_path(GOOD, path, value)))
    _check([line])


@fuzz_settings(300)
@given(st.lists(st.one_of(st.binary(max_size=200).map(lambda b: b.decode("utf-8", "replace")),
                          st.text(max_size=80), st.just(json.dumps(GOOD))), max_size=5))
def test_arbitrary_lines(lines: list[str]) -> None:
    _check(lines)
