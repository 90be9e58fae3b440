"""jsonread.loads is json.loads: the same values and the same errors."""

from __future__ import annotations

import json
import math

import pytest

from joulie_simhw import jsonread
from joulie_simhw.gpustate import GpuDevice, GpuState


def _state() -> str:
    g = GpuDevice(index=0, name="NVIDIA H100 80GB HBM3", uuid="GPU-1", pci_bus_id="00000000:10:00.0", min_limit_w=200,
                  max_limit_w=700, default_limit_w=700, limit_w=350.5, enforced_limit_w=350.5, draw_w=312.25,
                  util_pct=87, energy_mj=1 << 40, field_tokens={"power.min_limit": "[N/A]"}, sm_active=None)
    return GpuState("nvidia", "590.48.01", True, (g,)).to_json()


@pytest.mark.parametrize("text", [
    _state(), '  {"a": [1, 2.5, -3e-2, true, false, null, "\\u00e9\\n"]}\n', "[]", '"x"', "7", "\n\t{}\r\n",
])
def test_the_values_are_json_loads(text: str) -> None:
    assert jsonread.loads(text) == json.loads(text)


def test_nan_and_infinity_read_as_json_loads_reads_them() -> None:
    got = jsonread.loads('[NaN, Infinity, -Infinity]')
    assert math.isnan(got[0]) and got[1:] == [math.inf, -math.inf]


@pytest.mark.parametrize("text", ["", "   ", "{", '{"a": 1} x', '{"a": 1}{}', "[1,]", '{"a": "\x01"}'])
def test_bad_text_raises_json_loads_error(text: str) -> None:
    with pytest.raises(json.JSONDecodeError) as want:
        json.loads(text)
    with pytest.raises(json.JSONDecodeError) as got:
        jsonread.loads(text)
    assert str(got.value) == str(want.value)
