"""A dependency that stops answering (the API server, Prometheus): one log line when it goes away,
one when it comes back, quiet backoff in between.

Issue 23 (defect 2): during a 6-minute API server outage the controller manager logged a
traceback per retry (354 of them, 1.16 MB) and the workload runner died on the first one. A loop
that talks to a dependency asks ``due()`` before trying, reports ``failed(err)`` or ``ok()``
after, and logs nothing else about it. Delays follow the written-down sequence of
``joulie_api.backoff`` and then stay at its last step. Pure apart from the logger; time comes
from the injected monotonic clock.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from joulie_api.backoff import DEFAULT_DELAYS_S

MAX_ERROR_CHARS = 200


def _http_summary(err: BaseException) -> str:
    """``HTTP 429 Too Many Requests: <the Status message>`` for an HTTP error carrying ``status`` and
    ``reason`` (the kubernetes client's ApiException, whose str() is the status, then every response
    header on lines of their own: the multi-line warning issue 23's api-throttle run saw); "" else."""
    status, reason = getattr(err, "status", None), getattr(err, "reason", None)
    if not isinstance(status, int) or not status or not isinstance(reason, str):
        return ""
    text = f"HTTP {status} {reason}".strip()
    body = getattr(err, "body", None)
    try:
        message = json.loads(body).get("message") if body else None
    except (TypeError, ValueError, AttributeError):
        message = None
    return f"{text}: {message}" if isinstance(message, str) and message else text


def short_error(err: BaseException) -> str:
    """The first line of an error, type-named and bounded: no traceback, no wall of urllib3 text."""
    text = _http_summary(err) or (str(err).strip().splitlines()[0] if str(err).strip() else "")
    text = " ".join(text.split())
    text = text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS] + "…"
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def unanswered(err: BaseException) -> bool:
    """Whether a call failed because the server did not answer (or answered "not now": 408, 429,
    5xx), rather than answered no. urllib3's connection errors (MaxRetryError, what the kubernetes
    client raises when nothing listens) are matched by module: they are not OSErrors."""
    if isinstance(err, (OSError, TimeoutError)) or type(err).__module__.startswith("urllib3"):
        return True
    status = getattr(err, "status", None)
    return isinstance(status, int) and (status == 0 or status >= 500 or status in (408, 429))


def not_now(err: BaseException) -> bool:
    """Whether a call failed for now rather than for good: no answer (``unanswered``) or a 409
    Conflict, which a server-side apply with force meets only while another writer races it (or an
    injected conflict storm): the next try succeeds, so it is no error worth a line per try."""
    return unanswered(err) or getattr(err, "status", None) == 409


@dataclass
class Outage:
    """Whether ``what`` answers; ``failures`` counts failed tries since it last answered."""

    what: str
    log: logging.Logger
    monotonic: Callable[[], float] = field(default=time.monotonic)
    delays_s: Sequence[float] = DEFAULT_DELAYS_S
    failures: int = 0
    down_since_s: float | None = None
    next_try_s: float = 0.0
    last_error: str = ""

    @property
    def down(self) -> bool:
        return self.down_since_s is not None

    def due(self) -> bool:
        """Whether to try the dependency now (always while it answers; on the backoff schedule after)."""
        return not self.down or self.monotonic() >= self.next_try_s

    def failed(self, err: BaseException, traceback: bool = False) -> float:
        """Record a failed try; returns the seconds until the next one. Logs only the first failure
        (with its traceback when asked: an error that is no outage is worth one)."""
        now = self.monotonic()
        self.last_error = short_error(err)
        if self.down_since_s is None:
            self.down_since_s = now
            self.log.warning("%s failing (%s); retrying quietly with backoff until it works",
                             self.what, self.last_error, exc_info=err if traceback else None)
        delay = float(self.delays_s[min(self.failures, len(self.delays_s) - 1)]) if self.delays_s else 0.0
        self.failures += 1
        self.next_try_s = now + delay
        return delay

    def ok(self) -> None:
        """Record an answer; logs once when it follows an outage."""
        if self.down_since_s is not None:
            self.log.warning("%s works again after %.0f s (%d failed tries; last: %s)", self.what,
                             self.monotonic() - self.down_since_s, self.failures, self.last_error)
        self.down_since_s = None
        self.failures = 0
        self.next_try_s = 0.0
