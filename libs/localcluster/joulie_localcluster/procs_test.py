import socket

import pytest

from joulie_localcluster.procs import ephemeral_range, ports_below_ephemeral


def test_ports_lie_below_the_ephemeral_range_and_skip_a_taken_one() -> None:
    lo, _ = ephemeral_range()
    first = max(1024, lo - 4096)
    held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        # Hold a port of the block (the first one free), then pick from exactly there: it must be passed over.
        taken = next(p for p in range(first, lo) if _try_bind(held, p))
        ports = ports_below_ephemeral(3, start=taken)
    finally:
        held.close()
    assert taken not in ports
    assert len(set(ports)) == 3
    assert all(first <= p < lo for p in ports)  # no outgoing connection draws its local port from here


def _try_bind(s: socket.socket, port: int) -> bool:
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        return False
    return True


def test_more_ports_than_the_block_holds_is_an_error_naming_the_range() -> None:
    with pytest.raises(RuntimeError, match="below the ephemeral range"):
        ports_below_ephemeral(5, block=3)
