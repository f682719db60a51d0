"""Our own HTTP/1.1 connections: bodies exact however they arrive, keep-alive, limits, and every answer we do not read refused."""

from __future__ import annotations

import asyncio
import socket
import ssl
import threading
from collections.abc import Awaitable, Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarr3_backend.store import http_gets, tls
from zarr3_backend.store.http_gets import HttpError, HttpPool
from zarr3_backend.testing.latency_s3 import TlsFiles, self_signed_certificate

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def answer(body: bytes, *headers: str, status: str = "200 OK", version: str = "HTTP/1.1") -> bytes:
    head = [f"{version} {status}", f"Content-Length: {len(body)}", *headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


async def read_request(reader: asyncio.StreamReader) -> bytes:
    return await reader.readuntil(b"\r\n\r\n")


def run(
    handler: Handler, scenario: Callable[[HttpPool], Awaitable[object]], *, https: TlsFiles | None = None,
    trusted: TlsFiles | None = None, host: str = "127.0.0.1", **pool_options: float,
) -> object:
    """``scenario(pool)`` against a loopback server whose connections ``handler`` serves.

    ``https``: the server speaks TLS with that certificate, which the pool
    trusts unless ``trusted`` names another; ``host``: the name the pool connects to.
    """

    async def main() -> object:
        handlers: list[asyncio.Task[None]] = []
        writers: list[asyncio.StreamWriter] = []

        async def serving(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            handlers.append(asyncio.current_task())  # type: ignore[arg-type]
            writers.append(writer)
            await handler(reader, writer)

        server_context = client_context = None
        if https is not None:
            server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            server_context.load_cert_chain(https.certificate, https.key)
            client_context = ssl.create_default_context(cafile=(trusted or https).certificate)
        server = await asyncio.start_server(serving, "127.0.0.1", 0, ssl=server_context)
        port = server.sockets[0].getsockname()[1]
        options = {"limit": 4, "connect_timeout": 5.0, "read_timeout": 5.0, **pool_options}
        pool = HttpPool(host, port, client_context, **options)  # type: ignore[arg-type]
        try:
            return await scenario(pool)
        finally:
            pool.close()
            server.close()
            for task in handlers:
                task.cancel()
            await asyncio.gather(*handlers, return_exceptions=True)
            for writer in writers:
                writer.close()
            await server.wait_closed()
            await asyncio.sleep(0)  # the transports' closing callbacks run

    return asyncio.run(main())


def serve(*answers: bytes, fragments: list[int] | None = None) -> tuple[Handler, list[bytes], list[int]]:
    """A handler sending ``answers`` in turn on each connection (cut into ``fragments``), with the requests and connections seen."""
    requests: list[bytes] = []
    connections: list[int] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        try:
            for data in answers:
                requests.append(await read_request(reader))
                cuts = fragments or [len(data)]
                start = 0
                while start < len(data):
                    for size in cuts:
                        writer.write(data[start : start + size])
                        await writer.drain()
                        start += size
            await reader.read()  # until the client closes
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    return handler, requests, connections


async def get(pool: HttpPool, target: str = "/k") -> tuple[int, dict[str, str], bytes]:
    got = await pool.get(target, {"host": "h", "range": "bytes=0-9"})
    return got.status, dict(got.headers), got.body


@settings(max_examples=60, deadline=None)
@given(body=st.binary(max_size=3000), fragments=st.lists(st.integers(1, 700), min_size=1, max_size=6),
       single=st.integers(0, 3000), block=st.integers(1, 1024))  # fmt: skip
def test_a_body_arrives_exactly_however_it_is_cut(
    monkeypatch_module, body: bytes, fragments: list[int], single: int, block: int
):
    """Up to ``MAX_SINGLE`` into one buffer that is the answer itself; beyond, in blocks that are joined."""
    monkeypatch_module.setattr(http_gets, "MAX_SINGLE", single)
    monkeypatch_module.setattr(http_gets, "BLOCK", block)
    handler, requests, _ = serve(answer(body, "ETag: \"e\""), fragments=fragments)
    status, headers, got = run(handler, get)  # type: ignore[misc]
    assert (status, got, headers["etag"]) == (200, body, '"e"')
    assert type(got) is (bytearray if len(body) <= single else bytes)
    assert requests[0].startswith(b"GET /k HTTP/1.1\r\nhost: h\r\nrange: bytes=0-9\r\n")


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def test_connections_are_kept_alive_and_reused():
    handler, requests, connections = serve(*(answer(bytes([i]) * 5) for i in range(3)))

    async def scenario(pool: HttpPool) -> list[bytes]:
        return [(await get(pool))[2] for _ in range(3)]

    assert run(handler, scenario) == [bytes([i]) * 5 for i in range(3)]
    assert len(connections) == 1 and len(requests) == 3


@pytest.mark.parametrize("header", ["Connection: close", None])
def test_a_connection_the_answer_closes_is_not_reused(header):
    version = "HTTP/1.0" if header is None else "HTTP/1.1"
    handler, _, connections = serve(answer(b"one", *([header] if header else []), version=version), answer(b"two"))

    async def scenario(pool: HttpPool) -> list[bytes]:
        return [(await get(pool))[2] for _ in range(2)]

    assert run(handler, scenario) == [b"one", b"one"]  # the second request went out on a new connection
    assert len(connections) == 2


def test_a_request_a_reused_connection_drops_unanswered_is_sent_again():
    """A server's idle timeout can close a kept-alive connection just as a request goes out on it."""
    served: list[int] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        served.append(1)
        await read_request(reader)
        writer.write(answer(b"first" if len(served) == 1 else b"again"))
        await writer.drain()
        await read_request(reader)
        writer.close()  # the second request on this connection: closed unanswered

    async def scenario(pool: HttpPool) -> list[bytes]:
        return [(await get(pool))[2] for _ in range(2)]

    assert run(handler, scenario) == [b"first", b"again"]
    assert len(served) == 2


def test_a_request_a_warmed_connection_drops_unanswered_is_sent_again():
    """A warmed connection can wait unused until the server's idle timeout, as a kept-alive one can."""
    served: list[int] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        served.append(1)
        await read_request(reader)
        if len(served) > 1:
            writer.write(answer(b"again"))
            await writer.drain()
            await reader.read()
        writer.close()  # the first (the warmed one): closed unanswered

    async def scenario(pool: HttpPool) -> bytes:
        pool.warm(1)
        await asyncio.gather(*pool._warming)
        return (await get(pool))[2]

    assert run(handler, scenario) == b"again"
    assert len(served) == 2


def test_a_new_connection_dropped_unanswered_is_an_error():
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.close()

    with pytest.raises(HttpError, match="closed the connection before answering"):
        run(handler, get)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", "Content-Length"),
        (b"HTTP/1.1 200 OK\r\n\r\nno length", "Content-Length"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\ntoo long", "more bytes"),
        (b"ICY 200 OK\r\nContent-Length: 0\r\n\r\n", "status line"),
        (b"HTTP/1.1 100 Continue\r\n\r\n", "status line"),
        (b"HTTP/1.1 200 OK\r\nbroken header\r\n\r\n", "header line"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", "lost mid-answer"),
        (b"HTTP/1.1 200 OK\r\nX: " + b"x" * (70 << 10), "head longer"),
    ],
)
def test_answers_we_do_not_read_are_refused(data: bytes, reason: str):
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(data)
        await writer.drain()
        writer.close()

    with pytest.raises(HttpError, match=reason):
        run(handler, get)


def test_a_stalled_answer_times_out():
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
        await writer.drain()
        await asyncio.sleep(2)
        writer.close()

    with pytest.raises(HttpError, match="no data for 0.2 s"):
        run(handler, get, read_timeout=0.2)


def test_nothing_listening_is_an_error_naming_the_address():
    async def scenario(_: HttpPool) -> object:
        return await get(HttpPool("127.0.0.1", 9, None, limit=1, connect_timeout=5, read_timeout=5))

    handler, _, _ = serve()
    with pytest.raises(HttpError, match="cannot connect to 127.0.0.1:9"):
        run(handler, scenario)


def serve_counting() -> tuple[Handler, dict[str, int]]:
    """A handler answering each request 20 ms late, with the connections it saw and the most requests at once."""
    busy = {"now": 0, "most": 0, "connections": 0}

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        busy["connections"] += 1
        try:
            while True:
                await read_request(reader)
                busy["now"] += 1
                busy["most"] = max(busy["most"], busy["now"])
                await asyncio.sleep(0.02)
                busy["now"] -= 1
                writer.write(answer(b"ok"))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    return handler, busy


def test_requests_beyond_the_limit_wait_for_a_connection():
    handler, busy = serve_counting()

    async def scenario(pool: HttpPool) -> list[bytes]:
        return [got[2] for got in await asyncio.gather(*(get(pool) for _ in range(12)))]

    assert run(handler, scenario, limit=3) == [b"ok"] * 12
    assert busy["most"] == 3


def test_a_failed_connection_frees_its_place_for_a_waiting_request():
    attempts: list[int] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        attempts.append(1)
        await read_request(reader)
        if len(attempts) == 1:
            writer.write(b"HTTP/1.1 200 OK\r\n\r\n")  # refused: no Content-Length
        else:
            writer.write(answer(b"ok"))
        await writer.drain()
        writer.close()

    async def scenario(pool: HttpPool) -> list[object]:
        return await asyncio.gather(get(pool), get(pool), return_exceptions=True)

    first, second = run(handler, scenario, limit=1)  # type: ignore[misc]
    assert isinstance(first, HttpError) and second[2] == b"ok"


@pytest.mark.parametrize(("handshake", "most_at_once"), [(0.001, http_gets.MIN_CONNECTING), (0.05, 15)])
def test_connections_are_opened_a_few_at_a_time_unless_each_waits_on_the_network(
    monkeypatch: pytest.MonkeyPatch, handshake: float, most_at_once: int
):
    """Near the server, handshakes are CPU on the loop's thread: opened all at once they would all finish last."""
    opening = {"now": 0, "most": 0}
    open_connection = HttpPool._open_connection

    async def slow_open(pool: HttpPool, *address):  # a handshake that takes ``handshake`` seconds
        opening["now"] += 1
        opening["most"] = max(opening["most"], opening["now"])
        try:
            await asyncio.sleep(handshake)
            return await open_connection(pool, *address)
        finally:
            opening["now"] -= 1

    monkeypatch.setattr(HttpPool, "_open_connection", slow_open)

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                await read_request(reader)
                await asyncio.sleep(0.1)  # every request holds its connection: 16 are needed
                writer.write(answer(b"ok"))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def scenario(pool: HttpPool) -> list[bytes]:
        first = (await get(pool))[2]  # one connection open: how long it took is known
        opening["most"] = 0
        return [first] + [got[2] for got in await asyncio.gather(*(get(pool) for _ in range(16)))]

    assert run(handler, scenario, limit=16) == [b"ok"] * 17
    assert opening["most"] == most_at_once


@pytest.mark.parametrize(("host", "lookups"), [("127.0.0.1", 0), ("localhost", 1)])
def test_a_name_is_looked_up_once_for_the_connections_opened_together_and_an_address_never(
    monkeypatch: pytest.MonkeyPatch, host: str, lookups: int
):
    """A lookup waits for a thread of the loop's default executor, which other work may keep busy."""
    asked: list[str] = []
    getaddrinfo = asyncio.BaseEventLoop.getaddrinfo

    async def counting(loop, name, *args, **kwargs):
        asked.append(name)
        return [info for info in await getaddrinfo(loop, name, *args, **kwargs) if info[0] == socket.AF_INET]

    monkeypatch.setattr(asyncio.BaseEventLoop, "getaddrinfo", counting)
    handler, _, connections = serve(answer(b"ok"))

    async def scenario(pool: HttpPool) -> list[bytes]:
        named = HttpPool(host, pool._port, None, limit=4, connect_timeout=5, read_timeout=5)
        try:
            return [got[2] for got in await asyncio.gather(*(get(named) for _ in range(4)))]
        finally:
            named.close()

    assert run(handler, scenario) == [b"ok"] * 4
    assert len(connections) == 4 and asked == [host] * lookups


def test_a_line_break_in_a_request_is_refused_before_anything_is_sent():
    handler, requests, connections = serve(answer(b"ok"))

    async def scenario(pool: HttpPool) -> object:
        return await pool.get("/k", {"host": "h", "x-split": "a\r\nInjected: yes"})

    with pytest.raises(HttpError, match="line break"):
        run(handler, scenario)
    assert not requests and not connections


def test_warmed_connections_open_in_the_background_and_serve_the_next_wave():
    handler, requests, connections = serve(answer(b"ok"))

    async def scenario(pool: HttpPool) -> list[bytes]:
        pool.warm(9)  # beyond the limit (4): four
        for _ in range(100):
            if len(pool._idle) == 4:
                break
            await asyncio.sleep(0.01)
        assert len(connections) == 4 and not requests  # opened, nothing asked yet
        pool.warm(4)  # already there: nothing more
        return [got[2] for got in await asyncio.gather(*(get(pool) for _ in range(4)))]

    assert run(handler, scenario) == [b"ok"] * 4
    assert len(connections) == 4 and len(requests) == 4


def test_requests_beside_warming_share_the_limit():
    handler, busy = serve_counting()

    async def scenario(pool: HttpPool) -> list[bytes]:
        pool.warm(3)
        return [got[2] for got in await asyncio.gather(*(get(pool) for _ in range(12)))]

    assert run(handler, scenario, limit=3) == [b"ok"] * 12
    assert busy["most"] == 3 and busy["connections"] == 3


def test_warming_towards_nothing_listening_raises_nothing_and_frees_its_places():
    async def scenario(_: HttpPool) -> object:
        pool = HttpPool("127.0.0.1", 9, None, limit=2, connect_timeout=5, read_timeout=5)
        pool.warm(2)
        await asyncio.gather(*pool._warming)
        assert pool._open == 0
        return await get(pool)  # the request's own attempt reports the failure

    handler, _, _ = serve()
    with pytest.raises(HttpError, match="cannot connect to 127.0.0.1:9"):
        run(handler, scenario)


def test_a_closed_pool_warms_nothing_and_closes_what_was_warming():
    handler, _, connections = serve(answer(b"ok"))

    async def scenario(pool: HttpPool) -> int:
        pool.warm(2)
        await asyncio.sleep(0)  # both are connecting
        pool.warm(4)
        pool.close()
        await asyncio.gather(*pool._warming)
        return pool._open + len(pool._idle)

    assert run(handler, scenario) == 0
    assert len(connections) <= 2  # none opened after the close


# -- over TLS (zarr3_backend.store.tls) ------------------------------------------------------


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    pytest.importorskip("cryptography")
    return self_signed_certificate(tmp_path_factory.mktemp("tls"))


@settings(max_examples=30, deadline=None)
@given(body=st.binary(max_size=3000), fragments=st.lists(st.integers(1, 700), min_size=1, max_size=6))
def test_over_tls_a_body_arrives_exactly_however_its_records_are_cut(certificate: TlsFiles, body: bytes, fragments: list[int]):
    """Each write of the server is a TLS record of its own: heads and bodies split across records and reads."""
    handler, requests, _ = serve(answer(body, "ETag: \"e\""), answer(body[::-1]), fragments=fragments)

    async def twice(pool: HttpPool) -> list[tuple[int, dict[str, str], bytes]]:
        return [await get(pool), await get(pool)]

    first, second = run(handler, twice, https=certificate)  # type: ignore[misc]
    assert (first[0], first[2], first[1]["etag"]) == (200, body, '"e"') and second[2] == body[::-1]
    assert requests[0].startswith(b"GET /k HTTP/1.1\r\nhost: h\r\n") and len(requests) == 2


def test_over_tls_a_body_larger_than_the_receive_buffer_arrives_whole_on_one_kept_connection(certificate: TlsFiles):
    body = bytes(range(256)) * (5 * tls.RECEIVE_BYTES // 256 + 7)
    handler, _, connections = serve(answer(body), answer(b"next"))

    async def twice(pool: HttpPool) -> list[bytes]:
        return [(await get(pool))[2], (await get(pool))[2]]

    assert run(handler, twice, https=certificate) == [body, b"next"]
    assert len(connections) == 1


def test_handshakes_wait_for_the_server_on_a_thread_not_on_the_event_loop(certificate: TlsFiles, monkeypatch):
    threads: list[str] = []
    do_handshake = ssl.SSLObject.do_handshake

    def recorded(self: ssl.SSLObject) -> None:
        if not self.server_side:  # the test's server is asyncio's, on the loop
            threads.append(threading.current_thread().name)
        do_handshake(self)

    monkeypatch.setattr(ssl.SSLObject, "do_handshake", recorded)
    handler, _, _ = serve(answer(b"ok"))
    assert run(handler, get, https=certificate)[2] == b"ok"  # type: ignore[index]
    assert threads[0] == "MainThread"  # the ClientHello leaves at once
    assert len(threads) >= 2 and all(name.startswith("zarr3-tls") for name in threads[1:])


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"], ids=["untrusted", "another-name"])
def test_a_certificate_that_fails_its_checks_is_an_error_naming_why(certificate: TlsFiles, tmp_path, host: str):
    """A certificate not signed by what the context trusts, or not for the host connected to, is refused."""
    trusted = self_signed_certificate(tmp_path) if host == "127.0.0.1" else certificate
    handler, requests, _ = serve(answer(b"secret"))
    with pytest.raises(HttpError, match="cannot connect.*SSLCertVerificationError.*CERTIFICATE_VERIFY_FAILED"):
        run(handler, get, https=certificate, trusted=trusted, host=host)
    assert requests == []


def test_a_server_that_ends_or_stalls_the_handshake_is_an_error_and_leaves_nothing_open():
    """Plain TCP servers that a TLS client connects to: one closes at once, one never answers."""
    ended: list[bool] = []

    async def scenario() -> list[str]:
        async def close_at_once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.read(1 << 16)  # the ClientHello (left unread, closing would reset the connection)
            writer.close()

        async def say_nothing(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.read()  # until the client gives up
            ended.append(True)
            writer.close()

        messages = []
        for handler in (close_at_once, say_nothing):
            server = await asyncio.start_server(handler, "127.0.0.1", 0)
            pool = HttpPool("127.0.0.1", server.sockets[0].getsockname()[1], ssl.create_default_context(), limit=2,
                            connect_timeout=0.3, read_timeout=5.0)  # fmt: skip
            with pytest.raises(HttpError) as caught:
                await get(pool)
            messages.append(str(caught.value))
            pool.close()
            await asyncio.sleep(0.05)
            server.close()
            await server.wait_closed()
        return messages

    closed, stalled = asyncio.run(scenario())
    assert "cannot connect to 127.0.0.1" in closed and "during the TLS handshake" in closed
    assert "TimeoutError" in stalled and ended == [True]


def test_a_record_that_fails_its_check_mid_body_fails_the_answer(certificate: TlsFiles):
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(answer(b"x" * 100)[:-50])
        await writer.drain()
        raw = socket.socket(fileno=writer.get_extra_info("socket").fileno())  # under asyncio's TLS layer
        raw.send(b"\x17\x03\x03\x00\x20" + bytes(32))  # application data whose tag is wrong
        raw.detach()
        await reader.read()

    with pytest.raises(HttpError, match="lost mid-answer.*SSL"):
        run(handler, get, https=certificate)


def test_a_connection_the_server_closes_with_close_notify_is_replaced(certificate: TlsFiles):
    connections: list[int] = []

    async def answer_once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        await read_request(reader)
        writer.write(answer(f"answer {len(connections)}".encode()))
        await writer.drain()
        writer.close()  # asyncio's TLS transport sends close_notify first

    async def apart(pool: HttpPool) -> list[bytes]:
        first = (await get(pool))[2]
        await asyncio.sleep(0.1)
        return [first, (await get(pool))[2]]

    assert run(answer_once, apart, https=certificate) == [b"answer 1", b"answer 2"]
    assert len(connections) == 2
