"""`joulie-agent capture`: what lands in a fixture, and that private data does not."""

import json
from pathlib import Path

import pytest

from joulie_agent import corpus, testtrees
from joulie_agent.capture import capture_machine, redact


def test_redaction_covers_uuids_serials_macs_ips_and_host_names() -> None:
    text = ("GPU 0: H100 (UUID: GPU-7ee90a08-ee6b-2c54-02d0-dff15dba3fa6)\nserial: 1324021000217\n"
            "mac 52:54:00:12:34:56 ip 10.1.2.3/24 host gpu-node-17.cluster.example.org\n")
    out = redact(text, ["gpu-node-17.cluster.example.org", "gpu-node-17"])
    for secret in ("7ee90a08", "1324021000217", "52:54:00", "10.1.2.3", "gpu-node-17"):
        assert secret not in out
    assert "GPU-REDACTED" in out and "REDACTED-HOST" in out


def test_capture_copies_zones_policies_and_cpuinfo_into_a_valid_fixture(tmp_path: Path) -> None:
    root = tmp_path / "host"
    testtrees.rapl_node(root)
    testtrees.cpufreq_node(root, policies=2, driver="intel_pstate")
    out = capture_machine(root, tmp_path / "out", "my-box")
    assert (out / "powercap" / "intel-rapl:0" / "constraint_0_max_power_uw").read_text() == "165000000\n"
    # A rejecting limit (a directory) is not copied as data.
    assert not (out / "powercap" / "intel-rapl:0:0" / "constraint_0_power_limit_uw").exists()
    assert (out / "cpufreq" / "policy1" / "scaling_driver").read_text() == "intel_pstate\n"
    assert json.loads((out / "node-labels.json").read_text()) == {}
    assert not (out / "expected.json").exists()
    # The skeleton metadata must be filled in before the fixture is accepted.
    with pytest.raises(corpus.CorpusError, match="description"):
        corpus.load_machine(out)


def test_capture_refuses_bad_names_and_existing_directories(tmp_path: Path) -> None:
    testtrees.cpuinfo(tmp_path / "host")
    with pytest.raises(ValueError, match="--name"):
        capture_machine(tmp_path / "host", tmp_path / "out", "My Box")
    capture_machine(tmp_path / "host", tmp_path / "out", "box")
    with pytest.raises(ValueError, match="already exists"):
        capture_machine(tmp_path / "host", tmp_path / "out", "box")
