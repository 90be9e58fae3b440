"""S17: a push without a client certificate is refused and stores nothing, the control with one is
stored. Pure; ``telemetryauthstep.py`` makes the pushes and asks Prometheus."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from joulie_simcluster.smoke.checks import CHECKS, Assertion, _result


def telemetry_authenticated(
    tls: bool, control_stored: bool, refused: Mapping[str, str], stored_without: Iterable[str]
) -> Assertion:
    """S17. ``control_stored``: the push with a certificate of the cluster's CA was stored (so the probe
    could have been stored at all); ``refused``: each push without one (``tls``, ``http``) and how it
    ended ("" when the receiver accepted it); ``stored_without``: those whose series Prometheus holds."""
    expected = CHECKS["S17"][1]
    if not tls:
        return Assertion("S17", "skipped", "SIMCLUSTER_TELEMETRY_TLS=0: Prometheus takes plain-HTTP pushes", expected)
    failures = [f"the push without a client certificate over {how} was accepted" for how, why in refused.items()
                if not why]
    failures += [f"the push without a client certificate over {how} was stored" for how in stored_without]
    if not control_stored:
        failures.append("the control push with a certificate of the cluster's CA was not stored either: the probe "
                        "proves nothing")
    return _result("S17", failures, "refused without a certificate (" + "; ".join(
        f"{how}: {why}" for how, why in refused.items()) + "), nothing stored; stored with one", expected)
