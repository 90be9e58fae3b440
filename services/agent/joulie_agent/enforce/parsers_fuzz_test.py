"""Issue 23: the agent's parsers of sysfs files and GPU tool output, fuzzed with arbitrary bytes.

What a node can hand the agent: any bytes in any sysfs file (a buggy driver, a truncated read, a
file being rewritten) and any output from nvidia-smi, amd-smi or rocm-smi. None may crash the
agent; garbage becomes "unknown" plus a warning naming the file or tool and the line. Counts of
inputs tried are printed (``pytest -s``) and checked to be in the hundreds per target.
"""

from __future__ import annotations

import string
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from joulie_agent.discovery import gputools, powercap
from joulie_agent.discovery.catalog import load_catalog
from joulie_agent.discovery.cpuinfo import parse_cpuinfo
from joulie_agent.enforce.node import NodeController
from joulie_agent.fixtures import testtrees
from joulie_agent.host import hostread
from joulie_agent.host.toolrun import ToolResult, make_runner
from joulie_api.generated.nodetwin import CPUCapSpec, NodeTwinSpec
from joulie_common.clock import FakeClock
from joulie_testinfra.fuzzing import fuzz_report, fuzz_settings

TRIED: Counter[str] = Counter()
FUZZ = fuzz_settings(200)
# What an error or warning shown to a user must never carry.
LEAKS = ("Traceback", "set_int_max_str_digits", "pydantic.dev", "Exceeds the limit", "object at 0x")


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")  # as hostread.read_text decodes a file


# Bytes a node really produces are mostly short ASCII, sometimes numbers of any length: mix
# arbitrary bytes with digit runs (up to 6000 digits: past Python's int-from-string limit).
DIGITS = st.one_of(st.text(alphabet="0123456789", min_size=1, max_size=40).map(str.encode),
                   st.integers(4000, 6000).map(lambda n: b"7" * n))
NUMBERISH = st.builds(lambda s, d, e: s + d + e, st.sampled_from([b"", b"-", b"+", b" "]), DIGITS,
                      st.sampled_from([b"", b"\n", b".5", b" W", b"\x00"]))
BYTES = st.one_of(st.binary(max_size=512), NUMBERISH,
                  st.text(string.printable, max_size=300).map(str.encode))


def _every_parser_tried_often() -> None:
    assert all(n >= 50 for n in TRIED.values()), TRIED


report = fuzz_report(
    lambda: f"agent parser fuzz: {sum(TRIED.values())} inputs tried, 0 crashes: {dict(sorted(TRIED.items()))}",
    check=_every_parser_tried_often,
)


def _clean(messages: list[str], echoed: str = "") -> None:
    """No leak in a message, except one the input itself carried (a warning may quote the file)."""
    for m in messages:
        assert not any(leak in m and leak not in echoed for leak in LEAKS), m


@FUZZ
@given(BYTES)
def test_sysfs_integers(data: bytes) -> None:
    TRIED["sysfs integer"] += 1
    v = powercap.parse_int(_text(data))
    assert v is None or isinstance(v, int)


FILES = ("name", "enabled", "energy_uj", "max_energy_range_uj", "constraint_0_name", "constraint_0_power_limit_uw",
         "constraint_0_max_power_uw", "constraint_0_min_power_uw", "constraint_0_time_window_us")


@FUZZ
@given(st.dictionaries(st.sampled_from(FILES), st.one_of(st.none(), BYTES), max_size=len(FILES)))
def test_a_powercap_zone(files: dict[str, bytes | None]) -> None:
    TRIED["powercap zone"] += 1
    texts = {k: None if v is None else _text(v) for k, v in files.items()}
    res = powercap.parse_zone("intel-rapl:0", texts)
    _clean(res.warnings, echoed=" ".join(t for t in texts.values() if t))
    assert all("intel-rapl:0" in w for w in res.warnings)


@FUZZ
@given(st.lists(st.one_of(BYTES, st.sampled_from([b"processor\t: 0", b"model name\t: Intel(R) Xeon(R)",
                                                    b"physical id\t: 1", b"cpu implementer\t: 0x41"])), max_size=30))
def test_proc_cpuinfo(lines: list[bytes]) -> None:
    TRIED["/proc/cpuinfo"] += 1
    parse_cpuinfo(_text(b"\n".join(lines)))


@FUZZ
@given(st.lists(st.one_of(BYTES, st.builds(lambda *f: b", ".join(f), BYTES, BYTES, BYTES, BYTES, BYTES, BYTES)),
                max_size=10))
def test_nvidia_smi_rows(lines: list[bytes]) -> None:
    TRIED["nvidia-smi --query-gpu"] += 1
    text = _text(b"\n".join(lines))
    inv = gputools.parse_nvidia_csv(text)
    _clean(inv.warnings, echoed=text)
    assert all(w.startswith("nvidia-smi: line ") for w in inv.warnings)
    enforced, warnings = gputools.parse_nvidia_enforced(text)
    _clean(warnings, echoed=text)
    assert all(w.startswith("nvidia-smi enforced.power.limit: line ") for w in warnings)


JSONISH = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=20),
              st.integers(4000, 6000).map(lambda n: "7" * n)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(
        st.sampled_from(["gpu", "limit", "ppt0", "max_power", "min_power", "socket_power", "max_power_limit",
                         "min_power_limit", "socket_power_limit", "value", "unit", "card0", "card17", "gpu_data",
                         "Card Series", "Current Power Cap (W)", "Max Graphics Package Power (W)"]),
        inner, max_size=5)),
    max_leaves=20)


def _json_text(doc: Any) -> str:
    import json

    return json.dumps(doc)


@FUZZ
@given(st.one_of(BYTES, JSONISH.map(_json_text).map(str.encode)))
def test_amd_smi_and_rocm_smi_output(data: bytes) -> None:
    TRIED["amd-smi / rocm-smi"] += 1
    text = _text(data)
    for inv in (gputools.parse_amdsmi_limits(text), gputools.parse_rocmsmi(text)):
        _clean(inv.warnings, echoed=text)
        assert all(w.startswith(("amd-smi", "rocm-smi")) for w in inv.warnings)
    gputools.rocmsmi_failure_reason(text)
    gputools.amdsmi_set_failed(text)
    gputools.rocmsmi_set_succeeded(text)
    gputools.parse_watts(text)


@FUZZ
@given(st.dictionaries(st.sampled_from(["nvidia-smi", "amd-smi", "rocm-smi"]),
                       st.tuples(st.sampled_from([0, 0, 0, 2, 9, 124, 127]), BYTES), max_size=3),
       st.sampled_from(["nvidia", "amd", ""]))
def test_gpu_inventory_from_any_tool_answer(answers: dict[str, tuple[int, bytes]], vendor: str) -> None:
    TRIED["gpu inventory"] += 1

    def run(argv: list[str]) -> ToolResult:
        code, out = answers.get(argv[0], (127, b""))
        return ToolResult(tuple(argv), code, _text(out))

    inv = hostread.gpu_inventory(vendor, run, None)
    if inv is not None:
        _clean(inv.warnings, echoed=" ".join(_text(out) for _, out in answers.values()))


SYS_FILES = ("energy_uj", "max_energy_range_uj", "constraint_0_power_limit_uw", "constraint_0_max_power_uw",
             "constraint_0_name", "name", "enabled")


@fuzz_settings(50)
@given(st.dictionaries(st.sampled_from(SYS_FILES), BYTES, min_size=1, max_size=4), st.integers(0, 1))
def test_a_node_with_garbage_sysfs_files_discovers_and_enforces_without_crashing(
        tmp_path_factory: pytest.TempPathFactory, garbage: dict[str, bytes], zone: int) -> None:
    TRIED["node with garbage sysfs"] += 1
    root = tmp_path_factory.mktemp("node")
    testtrees.rapl_node(root)
    for fname, data in garbage.items():
        (root / "sys/class/powercap" / f"intel-rapl:{zone}" / fname).write_bytes(data)
    clock = FakeClock()
    c = NodeController("n1", hostread.HostPaths.under(root), load_catalog(), make_runner(str(root / "nobin")), None,
                       clock)
    hw = c.discover({}, {})
    echoed = " ".join(_text(d) for d in garbage.values())
    _clean(list(hw.quality.warnings or []) if hw.quality else [], echoed)
    for _ in range(2):
        out = c.reconcile_cpu(NodeTwinSpec(node_name="n1", profile="eco", cpu=CPUCapSpec(package_power_cap_watts=120)))
        _clean([out.message, out.drift], echoed)
        clock.advance(6)


def test_the_fuzzed_files_exist_in_the_fixture(tmp_path: Path) -> None:
    # The file names fuzzed above are the ones a RAPL zone really has (else the test fuzzes nothing).
    testtrees.rapl_node(tmp_path)
    assert all((tmp_path / "sys/class/powercap/intel-rapl:0" / f).exists() for f in SYS_FILES)
