"""The BMC directory from Secrets: pool-wide and per-node credentials, addresses, TLS options, and a
bad Secret refused naming its key (never a value)."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from joulie_redfish.directory import DirectoryError, merge, parse_secret

PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def secret(name: str = "bmc-pool-a", string_data: dict[str, str] | None = None, data: dict[str, str] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"metadata": {"name": name, "namespace": "joulie-system"}}
    if string_data is not None:
        obj["stringData"] = string_data
    if data is not None:
        obj["data"] = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
    return obj


def test_a_pool_secret_gives_every_node_its_address_and_the_pool_credentials_unless_it_has_its_own() -> None:
    d = parse_secret(secret(data={
        "username": "admin", "password": "pool-pw", "ca.crt": PEM,
        "node-a.address": "https://10.0.0.11", "node-b.example.org.address": "10.0.0.12:8443",
        "node-b.example.org.username": "other", "node-b.example.org.password": "own-pw",
        "node-b.example.org.system": "/redfish/v1/Systems/System.Embedded.1",
    }))
    assert sorted(d) == ["node-a", "node-b.example.org"]
    a, b = d["node-a"], d["node-b.example.org"]
    assert (a.address, a.credentials.username, a.credentials.password, a.system) == ("https://10.0.0.11", "admin", "pool-pw", None)
    assert (b.address, b.credentials.username, b.credentials.password) == ("https://10.0.0.12:8443", "other", "own-pw")
    assert b.system == "/redfish/v1/Systems/System.Embedded.1"
    assert a.ca_pem == PEM and a.verify_tls and a.secret == "joulie-system/bmc-pool-a"
    assert "pool-pw" not in repr(a) and "own-pw" not in repr(b) and PEM not in repr(a)


def test_string_data_is_read_and_verification_can_be_turned_off_explicitly() -> None:
    d = parse_secret(secret(string_data={"node-a.address": "http://127.0.0.1:4000", "node-a.username": "u", "node-a.password": "p",
                                         "insecure-skip-tls-verify": "true"}))
    assert d["node-a"].address == "http://127.0.0.1:4000" and not d["node-a"].verify_tls


@pytest.mark.parametrize(
    ("string_data", "message"),
    [
        ({"node-a.adress": "h"}, r"Secret joulie-system/bmc-pool-a: key 'node-a.adress': not one of username, password, ca.crt"),
        ({"node-a.username": "u", "node-a.password": "p"}, r"key 'node-a.address': missing"),
        ({"node-a.address": "h", "node-a.username": "u"}, r"key 'node-a.password': missing, and the Secret has no pool-wide 'password'"),
        ({"node-a.address": "h", "password": "p"}, r"key 'node-a.username': missing"),
        ({"node-a.address": "ftp://h", "username": "u", "password": "p"}, r"key 'node-a.address': scheme 'ftp'; expected https"),
        ({"node-a.address": "https://root:hunter2@h", "username": "u", "password": "p"},
         r"key 'node-a.address': credentials belong in the username/password keys"),
        ({"node-a.address": "https://h/redfish/v1", "username": "u", "password": "p"}, r"key 'node-a.address': the address is scheme://host\[:port\] only"),
        ({"node-a.address": "https://h:99999", "username": "u", "password": "p"}, r"key 'node-a.address': not a URL"),
        ({"node-a.address": "h", "username": "u", "password": "p", "ca.crt": "not pem"}, r"key 'ca.crt': not a PEM certificate bundle"),
        ({"node-a.address": "h", "username": "u", "password": "p", "insecure-skip-tls-verify": "yes"}, r"key 'insecure-skip-tls-verify'"),
        ({"node-a.address": "h", "username": "u", "password": "p", "node-a.system": "/x"}, r"key 'node-a.system': expected a path"),
    ],
)
def test_a_bad_secret_is_refused_naming_the_secret_and_the_key_but_no_value(string_data: dict[str, str], message: str) -> None:
    with pytest.raises(DirectoryError, match=message) as e:
        parse_secret(secret(string_data=string_data))
    assert "hunter2" not in str(e.value) and "'p'" not in str(e.value)


def test_data_that_is_not_base64_is_refused_naming_the_key() -> None:
    obj = secret()
    obj["data"] = {"node-a.address": "%%%"}
    with pytest.raises(DirectoryError, match=r"key 'node-a.address': data is not base64"):
        parse_secret(obj)


def test_secrets_merge_per_node_and_a_node_in_two_secrets_is_refused_naming_both() -> None:
    one = secret("bmc-node-a", string_data={"node-a.address": "h1", "username": "u", "password": "p"})
    two = secret("bmc-node-b", string_data={"node-b.address": "h2", "username": "u", "password": "p"})
    assert sorted(merge([one, two])) == ["node-a", "node-b"]
    dup = secret("bmc-pool", string_data={"node-a.address": "h3", "username": "u", "password": "p"})
    with pytest.raises(DirectoryError, match=r"Secret joulie-system/bmc-pool: key 'node-a.address': node 'node-a' is also in Secret joulie-system/bmc-node-a"):
        merge([one, dup])
