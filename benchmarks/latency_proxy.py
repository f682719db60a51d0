"""A TCP proxy adding request latency and a per-connection bandwidth cap, for object-store benchmarks.

Put it in front of a loopback S3 server (moto): every request (the first
bytes a client sends after the server answered) waits ``latency`` seconds
before it is forwarded, and each direction of a connection moves at most
``bandwidth`` bytes per second, roughly what S3 gives one connection.

>>> with latency_proxy("127.0.0.1", 9, latency=0.0) as port:
...     port > 0
True
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

CHUNK = 1 << 16


@contextmanager
def latency_proxy(host: str, port: int, latency: float = 0.05, bandwidth: float = 100e6) -> Iterator[int]:
    """Run the proxy on 127.0.0.1 (free port) towards ``host:port``; yields the proxy's port."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=_connect, args=(client, host, port, latency, bandwidth), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        listener.close()


def _connect(client: socket.socket, host: str, port: int, latency: float, bandwidth: float) -> None:
    try:
        upstream = socket.create_connection((host, port))
    except OSError:
        client.close()
        return
    answered = threading.Event()
    answered.set()  # the first request on a connection waits too
    threading.Thread(target=_pump, args=(client, upstream, bandwidth, latency, answered, False), daemon=True).start()
    _pump(upstream, client, bandwidth, 0.0, answered, True)


def _pump(source: socket.socket, sink: socket.socket, bandwidth: float, latency: float,
          answered: threading.Event, is_response: bool) -> None:
    try:
        while True:
            data = source.recv(CHUNK)
            if not data:
                break
            if is_response:
                answered.set()
            elif answered.is_set():  # a new request: the round trip starts now
                answered.clear()
                time.sleep(latency)
            time.sleep(len(data) / bandwidth)
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (source, sink):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
