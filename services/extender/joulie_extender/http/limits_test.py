"""The extender under slow and oversized uploads, on a real uvicorn over loopback: it keeps answering
kube-scheduler's /filter, refuses what it cannot hold at once (503, 413, 408) and never buffers more
than its limits allow; and its TLS option with kube-scheduler's client certificate."""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from joulie_extender.cache.store import StateCache
from joulie_extender.http.app import create_app
from joulie_extender.http.server import ServerThread, tls_options
from joulie_extender.settings import Settings
from joulie_localcluster.certs import make_pki
from joulie_localcluster.procs import free_port

LIMITS = Settings(max_concurrent=4, max_per_client=2, body_timeout_s=1.5, max_body_bytes=16 * 2**20)
FILTER = json.dumps({"Pod": {"metadata": {"name": "p"}}, "NodeNames": ["n1", "n2"]}).encode()


@pytest.fixture
def server() -> Iterator[ServerThread]:
    s = ServerThread(create_app(StateCache(), LIMITS), free_port()).start()
    yield s
    s.stop()


def post(url: str, body: bytes = FILTER, timeout_s: float = 2.0, context: ssl.SSLContext | None = None) -> int:
    req = urllib.request.Request(url + "/filter", data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout_s, context=context) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as err:
        return int(err.code)


def slow_upload(url: str, source_ip: str) -> socket.socket:
    """A POST that declares a 16 MiB body and sends 1 KiB of it, from `source_ip` (any 127/8 address)."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=5, source_address=(source_ip, 0))
    sock.sendall(
        b"POST /prioritize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % (16 * 2**20) + b"{" + b" " * 1023
    )
    return sock


def status_of(sock: socket.socket) -> int:
    head = sock.recv(64)
    return int(head.split()[1]) if head.startswith(b"HTTP/1.1") else -1


def test_one_client_holding_slow_uploads_cannot_starve_kube_scheduler(server: ServerThread) -> None:
    """Six held uploads from one peer: two are admitted (the per-client share), four get 503 at once;
    kube-scheduler's /filter from another address is answered 200 throughout, quickly."""
    held = [slow_upload(server.url, "127.0.0.2") for _ in range(6)]
    try:
        time.sleep(0.3)
        for _ in range(10):
            started = time.monotonic()
            assert post(server.url) == 200
            assert time.monotonic() - started < 0.5
        refused = []
        for sock in held:
            sock.settimeout(0.2)
            with contextlib.suppress(TimeoutError):
                refused.append(status_of(sock))
        assert refused == [503] * 4, refused
        # The two admitted ones are cut off by the body timeout, 408, freeing their slots.
        for sock in held:
            sock.settimeout(3)
        assert sorted(s for s in (status_of(x) for x in held) if s != -1) == [408, 408]
    finally:
        for sock in held:
            sock.close()


def test_many_peers_filling_every_slot_get_answers_in_bounded_time(server: ServerThread) -> None:
    """Slow uploads from four addresses fill all four slots: /filter gets 503 at once (kube-scheduler
    moves on, ignorable), never a hang, and 200 again once the body timeout frees the slots."""
    held = [slow_upload(server.url, f"127.0.0.{i}") for i in (2, 3, 4, 5) for _ in range(2)]
    try:
        time.sleep(0.3)
        started = time.monotonic()
        assert post(server.url) == 503
        assert time.monotonic() - started < 0.5
        deadline = time.monotonic() + LIMITS.body_timeout_s + 2
        while post(server.url) != 200:
            assert time.monotonic() < deadline, "the slots were not freed by the body timeout"
            time.sleep(0.1)
        with urllib.request.urlopen(server.url + "/metrics", timeout=2) as resp:
            text = resp.read().decode()
        assert 'joulie_scheduler_refused_requests_total{endpoint="prioritize",reason="body-timeout"}' in text
        assert 'joulie_scheduler_refused_requests_total{endpoint="filter",reason="busy"}' in text
    finally:
        for sock in held:
            sock.close()


def test_a_declared_oversized_body_is_refused_before_it_is_sent(server: ServerThread) -> None:
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=2) as sock:
        sock.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (17 * 2**20))
        assert status_of(sock) == 413


def test_tls_with_a_required_client_certificate(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    settings = Settings(
        tls_cert_file=str(pki.server_crt), tls_key_file=str(pki.server_key), tls_client_ca_file=str(pki.ca_crt)
    )
    s = ServerThread(create_app(StateCache(), settings), free_port(), **tls_options(settings)).start()
    try:
        assert s.url.startswith("https://")
        trusted = ssl.create_default_context(cafile=str(pki.ca_crt))
        with pytest.raises((ssl.SSLError, urllib.error.URLError, ConnectionError)):
            post(s.url, context=trusted)  # no client certificate: the handshake fails
        trusted.load_cert_chain(str(pki.admin_crt), str(pki.admin_key))
        assert post(s.url, context=trusted) == 200
        with pytest.raises((urllib.error.URLError, ConnectionError)):
            post(s.url.replace("https://", "http://"))  # plain HTTP is not served
    finally:
        s.stop()


def test_a_hundred_concurrent_slow_uploads_leave_it_answering_filter_in_bounded_time() -> None:
    """Issue 36's case: 100 peers (100 loopback addresses) each holding a 16 MiB upload, at the default
    limits. /filter is answered throughout, each call within 0.5 s (503 while every slot is held, so
    an ignorable extender is skipped, never a hang), the uploads past the limits refused at once, and
    200 again once the body timeout frees the slots."""
    limits = Settings(body_timeout_s=1.5)  # the default concurrency and body limits; a short deadline
    s = ServerThread(create_app(StateCache(), limits), free_port()).start()
    held: list[socket.socket] = []
    try:
        held = [slow_upload(s.url, f"127.0.{1 + i // 200}.{2 + i % 200}") for i in range(100)]
        time.sleep(0.3)
        answers = []
        for _ in range(10):
            started = time.monotonic()
            answers.append(post(s.url))
            assert time.monotonic() - started < 0.5
        assert set(answers) <= {200, 503}, answers
        refused = 0
        for sock in held:
            sock.settimeout(0.05)
            with contextlib.suppress(TimeoutError):
                refused += status_of(sock) == 503
        assert refused == 100 - limits.max_concurrent  # only the admitted ones are read at all
        deadline = time.monotonic() + limits.body_timeout_s + 2
        while post(s.url) != 200:
            assert time.monotonic() < deadline, "the slots were not freed by the body timeout"
            time.sleep(0.1)
    finally:
        for sock in held:
            sock.close()
        s.stop()
