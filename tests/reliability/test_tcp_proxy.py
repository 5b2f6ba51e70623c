"""The TCP proxy the outage tests cut: once cut, no new connection reaches the target (a
connection accepted in the moment of the cut once let a press through to the database and the
test waited for an outage answer that never came)."""

from __future__ import annotations

import socket

import pytest

from tests.support.fakes.tcp_proxy import TcpProxy


@pytest.fixture
def target():
    server = socket.create_server(("127.0.0.1", 0))
    yield server
    server.close()


def test_a_cut_proxy_refuses_new_connections_and_a_healed_one_forwards(target):
    proxy = TcpProxy(target.getsockname())
    try:
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=2):
            target.settimeout(2)
            accepted, _ = target.accept()
            accepted.close()
        proxy.cut()
        for _ in range(20):
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection(("127.0.0.1", proxy.port), timeout=2)
        proxy.heal()
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=2) as client:
            client.sendall(b"ping")
            accepted, _ = target.accept()
            assert accepted.recv(4) == b"ping"
            accepted.close()
    finally:
        proxy.close()
