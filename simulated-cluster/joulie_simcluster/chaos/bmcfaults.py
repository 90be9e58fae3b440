"""The ``bmc-refuse`` fault's switch: the simulator's emulated BMCs told what share of power-ons to
refuse (``POST /debug/bmc/faults``). Shell."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from joulie_simcluster.errors import RuntimeFailure
from joulie_simcluster.state import StateDir


def set_bmc_faults(state: StateDir, failure_share: float) -> dict[str, Any]:
    """``POST /debug/bmc/faults`` on the simulator: the share of power-ons its BMCs refuse from now on."""
    url = f"http://{(state.read_deploy_env() or {})['SIMULATOR_HTTP']}/debug/bmc/faults"
    body = json.dumps({"failureShare": failure_share, "hangShare": 0.0}).encode()
    req = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            answer: dict[str, Any] = json.loads(resp.read())
            return answer
    except (OSError, ValueError) as e:
        raise RuntimeFailure(f"chaos: POST {url} failed: {e}") from None
