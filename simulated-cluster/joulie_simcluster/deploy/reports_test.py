import contextlib
import http.server
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from joulie_simcluster.deploy.reports import Report, collector_report
from joulie_simcluster.state import StateDir


def test_the_collector_reports_only_in_its_modes_alive_and_healthy(tmp_path: Path) -> None:
    state = StateDir(tmp_path)
    assert collector_report(state, {}) is None  # otlp and the other direct modes
    with _serving(200) as url:
        assert collector_report(state, {"OTELCOL_HEALTH_URL": url, "OTELCOL_PID": str(os.getpid())}) == \
            Report("otelcol", True, "health check answers")
        dead = collector_report(state, {"OTELCOL_HEALTH_URL": url, "OTELCOL_PID": "999999999"})
        assert dead == Report("otelcol", False, f"pid 999999999 not running; log {tmp_path / 'logs' / 'otelcol.log'}")
    with _serving(503) as url:
        sick = collector_report(state, {"OTELCOL_HEALTH_URL": url, "OTELCOL_PID": str(os.getpid())})
        assert sick is not None and not sick.ok and sick.detail.startswith(url)


@contextlib.contextmanager
def _serving(status: int) -> Iterator[str]:
    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(status)
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def test_a_slow_api_answer_while_waiting_is_tried_again_not_fatal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from joulie_simcluster.deploy import reports
    from joulie_simcluster.errors import RuntimeFailure

    answers: list[object] = [TimeoutError("The read operation timed out"), [Report("simulator", True, "")]]

    def fake(*_: object) -> list[Report]:
        a = answers.pop(0)
        if isinstance(a, BaseException):
            raise a
        return a  # type: ignore[return-value]

    monkeypatch.setattr(reports, "component_reports", fake)
    monkeypatch.setattr("joulie_simcluster.deploy.reports.time.sleep", lambda _s: None)
    said: list[str] = []
    assert reports.wait_reports(StateDir(tmp_path), {}, [], 60, said.append) == [Report("simulator", True, "")]
    assert said[0].startswith("cannot look at the reports this time (The read operation timed out)")
    answers[:] = [TimeoutError("still slow")]
    with pytest.raises(RuntimeFailure, match="cannot read the components' reports: still slow"):
        reports.wait_reports(StateDir(tmp_path), {}, [], 0, said.append)
