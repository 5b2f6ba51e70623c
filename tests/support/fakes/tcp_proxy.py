"""A TCP proxy on 127.0.0.1 that a test can cut, for a database outage without stopping the
database: :meth:`TcpProxy.cut` resets every connection and refuses new ones, :meth:`TcpProxy.heal`
accepts again on the same port."""

from __future__ import annotations

import socket
import struct
import threading


class TcpProxy:
    """Forwards ``127.0.0.1:<port>`` to ``target`` (host, port) until :meth:`close`."""

    def __init__(self, target: tuple[str, int]):
        self.target = target
        self._lock = threading.Lock()
        self._conns: list[socket.socket] = []
        self._listener = self._listen(0)
        self.port: int = self._listener.getsockname()[1]

    def _listen(self, port: int) -> socket.socket:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(64)
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return listener

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            if listener.fileno() == -1:
                # Accepted in the moment between cut() and the accept waking up: refuse it too.
                client.close()
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def cut(self) -> None:
        """Reset every open connection and refuse new ones (the database "goes down")."""
        try:
            # close() alone leaves the socket listening while the accept thread blocks on it
            # (Linux), so one more connection would get through; shutdown() wakes that accept.
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._listener.close()
        with self._lock:
            conns, self._conns = self._conns, []
        for s in conns:
            try:
                # SO_LINGER 0: close with a RST, as a crashed server or a dropped route looks.
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                s.close()
            except OSError:
                pass

    def heal(self) -> None:
        """Accept connections again, on the same port."""
        self._listener = self._listen(self.port)

    def close(self) -> None:
        self.cut()
