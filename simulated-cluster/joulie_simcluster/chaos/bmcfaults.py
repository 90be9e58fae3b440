"""The ``bmc-refuse`` and ``bmc-hang`` faults' switch (and ``simcluster suspend-live``'s): the simulator's
emulated BMCs told what share of power-ons to refuse or hang, of every node or of the named ones
(``POST /debug/bmc/faults``). Shell."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Sequence
from typing import Any

from joulie_simcluster.errors import RuntimeFailure
from joulie_simcluster.state import StateDir


def set_bmc_faults(
    state: StateDir, failure_share: float, hang_share: float = 0.0, nodes: Sequence[str] = ()
) -> dict[str, Any]:
    """``POST /debug/bmc/faults`` on the simulator: the share of power-ons its BMCs refuse, and hang, from
    now on; only the BMCs of ``nodes`` when given. The answer holds the counts drawn so far (``drawn``)."""
    url = f"http://{(state.read_deploy_env() or {})['SIMULATOR_HTTP']}/debug/bmc/faults"
    fault: dict[str, Any] = {"failureShare": failure_share, "hangShare": hang_share}
    if nodes:
        fault["nodes"] = list(nodes)
    body = json.dumps(fault).encode()
    req = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            answer: dict[str, Any] = json.loads(resp.read())
            return answer
    except (OSError, ValueError) as e:
        raise RuntimeFailure(f"chaos: POST {url} failed: {e}") from None
