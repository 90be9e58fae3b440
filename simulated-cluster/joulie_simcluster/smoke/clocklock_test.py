"""S14's evaluations on hand-made NodeTwins and emulator truth (an H100 NVL: 345-1785 MHz)."""

from typing import Any

from joulie_simcluster.smoke.clocklock import lock_held, lock_reapplied, lock_released, reported_mhz


def twin(result: str | None = "applied", held: float | None = 1245, drift: str = "") -> dict[str, Any]:
    lock: dict[str, Any] = {"result": result, "lockedMaxMhz": held, "message": "x"}
    if drift:
        lock["drift"] = drift
    return {"status": {"controlStatus": {"gpu": {"result": "none", "clockLock": lock}}}} if result else {"status": {}}


def truth(*locks: float | None) -> dict[str, Any]:
    return {
        "gpus": [
            {"index": i, "lockMaxMhz": m, "smClockMinMhz": 345.0, "smClockMaxMhz": 1785.0} for i, m in enumerate(locks)
        ]
    }


def test_a_lock_holds_when_the_agent_and_every_board_agree_at_or_below_the_request() -> None:
    assert lock_held("n", twin(), truth(1245, 1245)) == []
    assert reported_mhz(twin()) == 1245
    assert lock_held("n", twin(), truth(1245, None)) == ["n gpu 1: the emulator holds None MHz, the agent reports 1245"]
    assert lock_held("n", twin(held=1500), truth(1500)) == ["n gpu 0: 1500 MHz outside [345, 70 % of 1785] MHz"]
    assert lock_held("n", twin(result="error", held=None), truth(1245))[0].startswith("n: controlStatus.gpu.clockLock")
    assert lock_held("n", twin(result=None), truth(1245)) == [
        "n: controlStatus.gpu.clockLock absent, want applied with lockedMaxMhz"
    ]


def test_after_a_reset_the_lost_lock_must_be_reported_as_drift_and_held_again() -> None:
    lost = "gpu 0 SM clock lock 1245 MHz lost (no longer limited by a clock setting); re-applied"
    assert lock_reapplied("n", twin(drift=lost), truth(1245)) == []
    assert lock_reapplied("n", twin(), truth(1245)) == [
        "n: controlStatus.gpu.clockLock.drift absent, want the lost lock"
    ]
    assert lock_reapplied("n", twin(drift=lost), truth(None)) == [
        "n gpu 0: the emulator holds None MHz, the agent reports 1245"
    ]


def test_a_released_lock_leaves_no_board_locked() -> None:
    assert lock_released("n", twin(result="none", held=None), truth(None, None)) == []
    assert lock_released("n", twin(), truth(1245)) == [
        "n gpu 0: still locked at 1245 MHz",
        "n: controlStatus.gpu.clockLock still applied after the spec dropped it",
    ]
