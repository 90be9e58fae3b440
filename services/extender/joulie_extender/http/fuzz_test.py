"""Fuzzing the HTTP surface from its OpenAPI schema (schemathesis): never a 5xx.

Positive cases follow the schema, negative ones break it on purpose (wrong types, missing
Pod, bad NodeNames); a third pass throws arbitrary JSON and bytes at both POST endpoints.
Bounded: about 100 inputs per operation and mode, a few seconds in all.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
import schemathesis
from hypothesis import given
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.core.result import Ok

from joulie_extender.cache.store import StateCache
from joulie_extender.http.app import create_app
from joulie_extender.rules.scoring import TwinView
from joulie_extender.settings import Settings
from joulie_testinfra.fuzzing import fuzz_report, fuzz_settings

MAX_EXAMPLES = 100
TRIED: Counter[str] = Counter()
STATUSES: Counter[int] = Counter()


def _app() -> Any:
    cache = StateCache()
    cache.put_twin("n1", TwinView("n1", "eco", 50.0, 20.0))
    return create_app(cache, Settings(max_body_bytes=1 << 20, debug_endpoints=True))


SCHEMA = schemathesis.openapi.from_asgi("/openapi.json", _app())
LOADED = list(SCHEMA.get_all_operations())
OPERATIONS = [(r.ok().method.upper(), r.ok().path) for r in LOADED if isinstance(r, Ok)]
FUZZ = fuzz_settings(MAX_EXAMPLES)


def _no_server_error() -> None:
    assert not [s for s in STATUSES if s >= 500]


report = fuzz_report(
    lambda: f"fuzz: {sum(TRIED.values())} inputs tried ({dict(TRIED)}); status codes {dict(STATUSES)}",
    check=_no_server_error,
)


def test_schema_lists_the_extender_operations() -> None:
    assert all(isinstance(r, Ok) for r in LOADED), "every operation in the OpenAPI schema must load"
    assert {("POST", "/filter"), ("POST", "/prioritize"), ("GET", "/healthz")} <= set(OPERATIONS)


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=["positive", "negative"])
@pytest.mark.parametrize(("method", "path"), OPERATIONS)
def test_no_input_from_the_schema_causes_a_server_error(method: str, path: str, mode: GenerationMode) -> None:
    op = SCHEMA[path][method]
    if mode == GenerationMode.NEGATIVE and method == "GET":
        pytest.skip("GET operations take no input to break")
    count = 0

    @FUZZ
    @given(op.as_strategy(generation_mode=mode))
    def run(case: Any) -> None:
        nonlocal count
        response = case.call()
        count += 1
        STATUSES[response.status_code] += 1
        assert response.status_code < 500, f"{method} {path} -> {response.status_code}: {response.text[:300]}"
        if method == "POST" and response.status_code == 400:
            assert "error" in response.json()

    run()
    TRIED[f"{method} {path} {mode.value}"] += count
    assert count > 0


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(
        st.sampled_from(["Pod", "pod", "Nodes", "NodeNames", "nodenames", "items", "metadata", "name", "spec",
                         "containers", "resources", "requests", "cpu", "annotations"]) | st.text(max_size=8),
        children, max_size=5),
    max_leaves=30,
)


@pytest.mark.parametrize("path", ["/filter", "/prioritize"])
def test_arbitrary_json_and_bytes_never_cause_a_server_error(path: str) -> None:
    from fastapi.testclient import TestClient

    client = TestClient(_app())
    count = 0

    @FUZZ
    @given(st.one_of(JSON.map(lambda d: json.dumps(d).encode()), st.binary(max_size=200)))
    def run(body: bytes) -> None:
        nonlocal count
        response = client.post(path, content=body, headers={"content-type": "application/json"})
        count += 1
        STATUSES[response.status_code] += 1
        assert response.status_code in (200, 400), f"{body!r} -> {response.status_code}: {response.text[:300]}"

    run()
    TRIED[f"POST {path} arbitrary"] += count
