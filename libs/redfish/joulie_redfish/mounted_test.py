"""A BMC Secret as the kubelet mounts it (a file per key behind ``..data`` links): the same entries
as the API's Secret, the kubelet's own files skipped, errors naming the directory and the key."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from joulie_redfish.directory import DirectoryError
from joulie_redfish.mounted import ca_bundle, read_mounted

PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def mount(root: Path, keys: dict[str, str]) -> Path:
    """The kubelet's layout: ..<timestamp>/<key> files, ..data -> ..<timestamp>, <key> -> ..data/<key>."""
    data = root / "..2026_12_03_18_00_00.1"
    data.mkdir(parents=True)
    for k, v in keys.items():
        (data / k).write_text(v)
    os.symlink(data.name, root / "..data")
    for k in keys:
        os.symlink(f"..data/{k}", root / k)
    return root


def test_a_mounted_pool_secret_gives_each_node_its_bmc_and_the_ca_file(tmp_path: Path) -> None:
    d = mount(tmp_path / "bmc", {"username": "joulie", "password": "pool-pw", "ca.crt": PEM,
                                 "gpu-node-01.address": "https://10.20.0.11", "cpu-0.address": "127.0.0.1:8443"})
    entries = read_mounted(d)
    assert sorted(entries) == ["cpu-0", "gpu-node-01"]
    e = entries["cpu-0"]
    assert (e.address, e.credentials.username, e.credentials.password, e.verify_tls) == (
        "https://127.0.0.1:8443", "joulie", "pool-pw", True)
    assert e.secret == f"mounted at {d}" and e.ca_pem == PEM
    assert ca_bundle(d, e) == d / "ca.crt" and (d / "ca.crt").read_text() == PEM


def test_without_a_ca_the_system_cas_verify(tmp_path: Path) -> None:
    d = mount(tmp_path / "bmc", {"username": "u", "password": "p", "n.address": "https://bmc"})
    e = read_mounted(d)["n"]
    assert ca_bundle(d, e) is None and e.verify_tls


def test_a_bad_key_is_refused_naming_the_mount_and_the_key_never_a_value(tmp_path: Path) -> None:
    d = mount(tmp_path / "bmc", {"password": "s3cret-pw", "n.address": "https://bmc"})
    with pytest.raises(DirectoryError) as e:
        read_mounted(d)
    assert str(e.value) == f"Secret mounted at {d}: key 'n.username': missing, and the Secret has no pool-wide 'username'"
    assert "s3cret-pw" not in str(e.value)


def test_a_missing_mount_is_a_directory_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(DirectoryError) as e:
        read_mounted(tmp_path / "absent")
    assert str(e.value).startswith(f"Secret mounted at {tmp_path / 'absent'}: unreadable (FileNotFoundError")
