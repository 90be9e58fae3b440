"""Issue 34: the trace's ``phases`` and ``origin`` fields and the Alibaba CSV reader fuzzed (hypothesis).
Any input either loads or is refused with a TraceError naming the file, the line and the field;
never a crash, never an interpreter hint."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from joulie_testinfra.fuzzing import DELETE, ODD_VALUES, clean, fuzz_settings, paths, set_path, with_huge
from joulie_workload.alibaba import COLUMNS, AlibabaOptions, extract_alibaba
from joulie_workload.trace import TraceError, parse_lines

GOOD: dict[str, Any] = {
    "type": "job", "jobId": "a", "submitTimeOffsetSec": 3, "workloadKind": "gpu-inference",
    "requests": {"cpu": 4, "gpu": 1}, "work": {"gpuUnits": 40},
    "phases": [{"name": "prefill", "timeShare": 0.2, "sensitivity": {"gpu": 0.9}, "utilization": {"gpu": 0.95}},
               {"name": "decode", "timeShare": 0.8, "sensitivity": {"gpu": 0.1}, "utilization": {"gpu": 0.5}}],
    "origin": {"trace": "alibaba-gpu-v2023", "gpuMilli": 460},
}
HEADER = ",".join((*COLUMNS, "gpu_spec"))
ROW = ["p", "4000", "8192", "1", "460", "BE", "Failed", "300", "700", "300", ""]


def _refused_cleanly(err: TraceError, source: str) -> None:
    msg = str(err)
    assert msg.startswith(f"{source}:"), msg
    assert not clean(msg), msg


@fuzz_settings(300)
@given(st.sampled_from([p for p in paths(GOOD) if p[0] in ("phases", "origin")]), st.one_of(ODD_VALUES, st.just(DELETE)))
def test_a_phased_job_with_one_field_broken(path: tuple[Any, ...], value: Any) -> None:
    try:
        parse_lines([with_huge(json.dumps(set_path(GOOD, path, value)))], "t.jsonl")
    except TraceError as err:
        _refused_cleanly(err, "t.jsonl")


@fuzz_settings(300)
@given(st.integers(0, len(ROW) - 1), st.one_of(st.text(max_size=12).filter(lambda t: not set(t) & set(',"\r\n')),
                                               st.sampled_from(["nan", "inf", "-1", "1e400", "1e300", "2.5", "", "0"])))
def test_an_alibaba_row_with_one_column_broken(column: int, value: str) -> None:
    row = list(ROW)
    row[column] = value
    try:
        extract_alibaba([HEADER, ",".join(row)], "a.csv", AlibabaOptions())
    except TraceError as err:
        _refused_cleanly(err, "a.csv")
