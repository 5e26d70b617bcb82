"""A class that reaches the room in one command: `python -m classroom.serve [--database URL] [--public-url URL]`.

`streamlit run app.py` answers this computer only (`.streamlit/config.toml`: its server has no header timeout and no
connection cap). This serves the same app (`app:app`, Streamlit's ASGI `App`, with its config) on the network under
Hypercorn, with what the bare server lacks and without nginx, so it works on a teacher's Mac or Windows laptop:

- a header timeout: a connection whose request head is not whole `--header-timeout` seconds (10) after it connected,
  or after its last answer, is closed, however slowly it trickles bytes; a head larger than 16 KiB is refused; and a
  request or WebSocket silent for `--read-timeout` seconds (30: above the class's 20 s long poll) is closed;
- a body deadline (`BodyDeadline`): a request whose body is not whole `--body-timeout` seconds (10) after its head
  arrived is answered 408 and its connection closed, however slowly it trickles;
- a connection cap, in total and per client address (`ConnectionCap`): past it a request gets 503 and a sentence. A
  whole class may sit behind one school address and each stage holds a long poll, so the per-address cap is generous;
  requests that are not long polls or WebSockets (pages, files, answers, steps) have a cap of their own per address,
  well below it, so slow requests from one address never take the places its class's long polls need;
- a trusted proxy (`--trusted-proxy`): only its X-Forwarded-For header names a client's address (classroom.clients);
- the process's open-files limit raised toward what the system allows (not on Windows, which has no such limit).

It prints the address students open and hands it to the pages in $CLASSROOM_PUBLIC_URL (ui/join_address.py), so the
join link and its QR code name this machine's network address, never localhost.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import ipaddress
import json
import os
import socket
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

import anyio

from classroom.clients import TRUSTED_PROXIES_ENV
from classroom.live import DATABASE_ENV
from classroom.privacy import POLICY

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app.py"
PUBLIC_URL_ENV = "CLASSROOM_PUBLIC_URL"  # the address students open (the app's root), read by ui/join_address.py
HOST = "0.0.0.0"  # every network this machine is on: the classroom's Wi-Fi
PORT = 8501
HEADER_TIMEOUT_S = 10.0  # from connecting (or the last answer) to a whole request head, as deploy/'s nginx allows
BODY_TIMEOUT_S = 10.0  # from a request's head to its whole body: an answer is 2 KB at most, a page sends none
READ_TIMEOUT_S = 30.0  # silence on an open request: above a class's long poll (20 s) and the WebSocket's pings
MAX_HEAD_BYTES = 16 * 1024  # a request's line and headers (Streamlit's cookies fit many times over)
PER_ADDRESS = 2000  # 300 students behind one school address: a page's WebSocket, a long poll, a few files each
# requests that are not long polls or WebSockets, per address: each is answered in milliseconds, so a school's page
# loads and answers hold a few dozen at once; requests held open on purpose (a body sent byte by byte) stop here
PER_ADDRESS_REQUESTS = 200
LONG_POLLS = ("/class/api/follow", "/class/api/watch")  # ends of paths (a prefix in front of the app keeps working)
HEALTH = "/_stcore/health"  # counted in the caps of all connections only: a supervisor's check gets through a flood
CONNECTIONS = 2500  # in total, a bit above one address's share, so one address never holds every place
BACKLOG = 1024  # connections waiting to be accepted: a class arriving at once
SPARE_FILES = 256  # open files beside the connections: the store, the Playground's workers, the app's files
OPEN_FILES_GOAL = 65536
MACOS_OPEN_MAX = 10240  # macOS refuses a soft limit above this whatever the hard limit says
CLASS_PAGE = "class"


class ConnectionCap:
    """ASGI middleware: at most `total` open requests and WebSockets, and `per_address` from one client address, of
    which at most `per_address_requests` are requests other than long polls (and health).

    Past either, a request is answered 503 with a sentence (JSON `{"error": ...}` on the class's push route, as its
    own refusals are) and the connection closed; a WebSocket is refused the same way before it opens. Everything
    runs on the server's one event loop, so plain counters are enough."""

    def __init__(
        self,
        app: ASGIApp,
        total: int = CONNECTIONS,
        per_address: int = PER_ADDRESS,
        per_address_requests: int = PER_ADDRESS_REQUESTS,
    ) -> None:
        self.app = app
        self.total = total
        self.per_address = per_address
        self.per_address_requests = per_address_requests
        self.open = 0
        self.by_address: Counter[str] = Counter()
        self.requests_by_address: Counter[str] = Counter()  # requests other than long polls and health

    def refusal(self, address: str, request: bool) -> str | None:
        """The sentence for a new connection from `address` (a `request` other than a long poll), or None when it may
        open."""
        if self.open >= self.total:
            return (
                f"This server is answering as many visitors as it can ({self.total} connections at once); "
                "try again in a moment."
            )
        if self.by_address[address] >= self.per_address:
            return (
                f"This server is answering as many connections from your network address as it allows "
                f"({self.per_address} at once); try again in a moment."
            )
        if request and self.requests_by_address[address] >= self.per_address_requests:
            return (
                f"This server is answering as many requests from your network address as it allows "
                f"({self.per_address_requests} at once); try again in a moment."
            )
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)  # the lifespan
            return
        client = scope.get("client")
        address = str(client[0]) if client else ""
        path = str(scope.get("path", ""))
        request = scope["type"] == "http" and not path.endswith(LONG_POLLS) and not path.endswith(HEALTH)
        sentence = self.refusal(address, request)
        if sentence is not None:
            await refuse(scope, send, 503, sentence)
            return
        self.open += 1
        self.by_address[address] += 1
        if request:
            self.requests_by_address[address] += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.open -= 1
            _release(self.by_address, address)
            if request:
                _release(self.requests_by_address, address)


def _release(counted: Counter[str], address: str) -> None:
    counted[address] -= 1
    if not counted[address]:
        del counted[address]


class BodyDeadline:
    """ASGI middleware: a request whose body is not whole `timeout_s` seconds after its head arrived is answered 408
    with a sentence (unless its answer had begun) and its connection closed, however slowly its bytes trickle in (a
    byte every few seconds never trips the read timeout). Hypercorn closes a connection whose request was answered
    before its body ended, so the place it held is free at the deadline."""

    def __init__(self, app: ASGIApp, timeout_s: float = BODY_TIMEOUT_S) -> None:
        self.app = app
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _has_body(scope):
            await self.app(scope, receive, send)  # a GET (a page, a long poll), a WebSocket, the lifespan
            return
        whole = answering = late = False

        async def receive_body() -> Message:
            nonlocal whole
            message = await receive()
            whole = whole or message["type"] != "http.request" or not message.get("more_body", False)
            return message

        async def send_answer(message: Message) -> None:
            nonlocal answering
            answering = answering or message["type"] == "http.response.start"
            await send(message)

        async with anyio.create_task_group() as tasks:

            async def deadline() -> None:
                nonlocal late
                await anyio.sleep(self.timeout_s)
                if not whole:
                    late = True
                    tasks.cancel_scope.cancel()  # the app too: it waits for a body that is not coming in time

            tasks.start_soon(deadline)
            await self.app(scope, receive_body, send_answer)
            tasks.cancel_scope.cancel()  # answered: the deadline is moot
        if late and not answering:
            sentence = f"This request's body did not arrive within {self.timeout_s:g} seconds; send it again."
            await refuse(scope, send, 408, sentence)


def _has_body(scope: Scope) -> bool:
    for name, value in scope.get("headers", ()):
        if name == b"transfer-encoding" or (name == b"content-length" and value.strip() not in (b"", b"0")):
            return True
    return False


async def refuse(scope: Scope, send: Send, status: int, sentence: str) -> None:
    """Answer `status` with `sentence` (JSON `{"error": ...}` on the class's push route, which the stage shows) and
    close the connection; a WebSocket is refused before it opens."""
    path = str(scope.get("path", ""))
    if "/class/api/" in path:
        body, kind = json.dumps({"error": sentence}).encode(), b"application/json"
    else:
        body, kind = sentence.encode(), b"text/plain; charset=utf-8"
    headers = [
        (b"content-type", kind),
        (b"content-length", str(len(body)).encode()),
        (b"retry-after", b"5"),
        (b"cache-control", b"no-store"),
        POLICY,  # as the app's own answers (it never reaches the app's middleware)
    ]
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": status, "headers": [*headers, (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})
    elif "websocket.http.response" in scope.get("extensions", {}):  # a WebSocket refused with the sentence
        await send({"type": "websocket.http.response.start", "status": status, "headers": headers})
        await send({"type": "websocket.http.response.body", "body": body})
    else:
        await send({"type": "websocket.close", "code": 1013})  # "try again later"


def raise_open_files(goal: int = OPEN_FILES_GOAL) -> int | None:
    """Raise this process's soft open-files limit toward the hard limit (at most `goal`); return the soft limit now,
    or None where there is no such limit (Windows). Each connection holds one file."""
    if sys.platform == "win32":
        return None
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return None
    wanted = goal if hard == resource.RLIM_INFINITY else min(goal, hard)
    for limit in (wanted, min(wanted, MACOS_OPEN_MAX)):
        if limit <= soft:
            break
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
            return limit
        except (ValueError, OSError):
            continue  # macOS: above its OPEN_MAX; try that
    return soft


def is_local_host(host: str) -> bool:
    """True for a host only this machine reaches: localhost (and *.localhost), 127.x.y.z, ::1, 0.0.0.0, ::."""
    host = host.strip("[]").rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost") or host in ("ip6-localhost", "ip6-loopback"):
        return True
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])  # fe80::1%eth0: the zone names an interface
    except ValueError:
        return False  # a name: what it resolves to is the network's business
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped  # ::ffff:127.0.0.1
    return address.is_loopback or address.is_unspecified


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def network_address() -> str | None:
    """This machine's IPv4 address on its network: the one `streamlit run` prints as its Network URL (the interface
    of the default route), else one its host name resolves to (a Wi-Fi with no route out); None when neither is."""
    from streamlit import net_util

    found = net_util.get_internal_ip()  # 127.0.0.1 when there is no route
    if found and not is_local_host(found):
        return found
    try:
        named = socket.gethostbyname_ex(socket.gethostname())[2]
    except OSError:
        return None
    return next((address for address in named if not is_local_host(address)), None)


def students_address(host: str, port: int, public_url: str | None) -> tuple[str | None, str]:
    """The app's root as students open it (None when no phone can), and where that address comes from."""
    if public_url:
        return public_url.rstrip("/"), "the public address you gave"
    if host in ("0.0.0.0", "::", ""):
        lan = network_address()
        if lan is not None:
            return f"http://{_url_host(lan)}:{port}", "this machine's network address"
        return None, "this machine has no network address (is it on the classroom's Wi-Fi?)"
    if is_local_host(host):
        return None, f"it listens on {host}, which answers this computer only"
    return f"http://{_url_host(host)}:{port}", "the address it listens on"


def bind(host: str, port: int, backlog: int = BACKLOG) -> socket.socket:
    """A listening socket on `host`:`port`. Not SO_REUSEADDR on Windows, where it would let two servers share a port
    without an error (as Streamlit's own server does)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        if os.name != "nt":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(backlog)
        sock.setblocking(False)
        return sock
    except BaseException:
        sock.close()
        raise


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m classroom.serve",
        description="Serve the app to a classroom's network: students open the address it prints.",
    )
    parser.add_argument("--host", default=HOST, help=f"the address to listen on (default {HOST}: every network)")
    parser.add_argument("--port", type=int, default=PORT, help=f"default {PORT}")
    parser.add_argument(
        "--database",
        metavar="URL",
        help=f"the class store, e.g. postgresql+psycopg://user@host/db (or ${DATABASE_ENV})",
    )
    parser.add_argument(
        "--public-url",
        metavar="URL",
        help="the address students open, when it is not this machine's (a proxy or a tunnel: https://...)",
    )
    parser.add_argument(
        "--header-timeout",
        type=float,
        default=HEADER_TIMEOUT_S,
        metavar="S",
        help=f"close a connection whose request head is not whole S seconds after it connected or was last "
        f"answered (default {HEADER_TIMEOUT_S:g})",
    )
    parser.add_argument(
        "--read-timeout",
        type=float,
        default=READ_TIMEOUT_S,
        metavar="S",
        help=f"close a request or WebSocket that sends nothing for S seconds (default {READ_TIMEOUT_S:g}; keep it "
        "above 20: a class's long poll waits that long in silence)",
    )
    parser.add_argument(
        "--body-timeout",
        type=float,
        default=BODY_TIMEOUT_S,
        metavar="S",
        help=f"answer 408 and close a request whose body is not whole S seconds after its head arrived (default "
        f"{BODY_TIMEOUT_S:g})",
    )
    parser.add_argument(
        "--per-address",
        type=int,
        default=PER_ADDRESS,
        metavar="N",
        help=f"open requests and WebSockets one client address may hold (default {PER_ADDRESS})",
    )
    parser.add_argument(
        "--per-address-requests",
        type=int,
        default=PER_ADDRESS_REQUESTS,
        metavar="N",
        help=f"of those, requests other than the class's long polls one client address may hold (default "
        f"{PER_ADDRESS_REQUESTS})",
    )
    parser.add_argument(
        "--trusted-proxy",
        action="append",
        metavar="ADDRESS",
        help=f"a proxy in front of this server (nginx, a tunnel) whose X-Forwarded-For names the client; repeat for "
        f"several (default: this machine's loopback, or ${TRUSTED_PROXIES_ENV})",
    )
    parser.add_argument(
        "--max-connections",
        type=int,
        default=CONNECTIONS,
        metavar="N",
        help=f"open requests and WebSockets in total (default {CONNECTIONS})",
    )
    options = parser.parse_args(argv)
    if options.public_url is not None:
        url = urlsplit(options.public_url)
        if url.scheme not in ("http", "https") or not url.hostname or url.query or url.fragment:
            parser.error("--public-url takes an address such as https://class.example.org (http or https, a host)")
    timeouts = (options.header_timeout, options.read_timeout, options.body_timeout)
    if min(timeouts) <= 0 or min(options.per_address, options.per_address_requests, options.max_connections) < 1:
        parser.error(
            "--header-timeout, --read-timeout, --body-timeout, --per-address, --per-address-requests and "
            "--max-connections must be positive"
        )
    return options


def _hypercorn_config(header_timeout: float, read_timeout: float) -> Any:
    from hypercorn.config import Config
    from streamlit.runtime.runtime_util import get_max_message_size_bytes

    config = Config()
    # Hypercorn's keep-alive timer runs from a connection's start (and from each answer) until a whole request head
    # has arrived, whatever bytes trickle in meanwhile: the header timeout. Its read timeout is per read, for the rest.
    config.keep_alive_timeout = header_timeout
    config.read_timeout = read_timeout  # type: ignore[assignment]  # an int in its annotation; any number works
    config.h11_max_incomplete_size = MAX_HEAD_BYTES
    config.websocket_max_message_size = get_max_message_size_bytes()  # server.maxMessageSize, as Streamlit's server
    config.websocket_ping_interval = read_timeout / 3  # the browser's pongs keep an open page's WebSocket reading
    config.backlog = BACKLOG
    config.accesslog = None
    config.loglevel = "WARNING"  # not its "Running on http://0.0.0.0:8501": the address to open is printed below
    return config


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_args(argv)
    if options.database:
        os.environ[DATABASE_ENV] = options.database  # classroom.live.database_url reads it
    if options.trusted_proxy:
        os.environ[TRUSTED_PROXIES_ENV] = ",".join(options.trusted_proxy)  # classroom.clients reads it
    files = raise_open_files()
    total = options.max_connections
    if files is not None and files - SPARE_FILES < total:
        total = max(1, files - SPARE_FILES)
        print(f"This computer lets the server open {files} files: it takes at most {total} connections at once.")
    per_address = min(options.per_address, total)
    per_address_requests = min(options.per_address_requests, per_address)

    try:
        sock = bind(options.host, options.port)
    except OSError as error:
        if error.errno in (errno.EADDRINUSE, getattr(errno, "WSAEADDRINUSE", -1)):
            print(f"Port {options.port} is in use (another server?): pick another with --port.", file=sys.stderr)
        else:
            print(f"Cannot listen on {options.host}:{options.port}: {error.strerror or error}.", file=sys.stderr)
        return 1

    public = options.public_url or os.environ.get(PUBLIC_URL_ENV) or None
    address, why = students_address(options.host, options.port, public)
    if address is None:
        os.environ.pop(PUBLIC_URL_ENV, None)
        print(f"Students cannot open this server: {why}. Stop with Ctrl-C.", flush=True)
    else:
        os.environ[PUBLIC_URL_ENV] = address
        print(f"Students open {address}/{CLASS_PAGE} ({why}). Stop with Ctrl-C.", flush=True)

    from hypercorn.asyncio.run import worker_serve
    from hypercorn.config import Sockets
    from hypercorn.utils import wrap_app
    from streamlit import config as streamlit_config
    from streamlit.web import bootstrap

    # As `streamlit run app.py` does: the config in .streamlit/ beside app.py applies (XSRF, message sizes, theme)
    # and app.py's `frame.py` is found beside it, from whatever folder this runs; app.py sees no arguments of ours.
    streamlit_config._main_script_path = str(APP)
    bootstrap.load_config_options({"server.address": options.host, "server.port": options.port})
    sys.path.insert(0, str(ROOT))
    sys.argv = [str(APP)]
    from app import app

    config = _hypercorn_config(options.header_timeout, options.read_timeout)
    deadline = BodyDeadline(app, options.body_timeout)
    capped = cast(Any, ConnectionCap(deadline, total, per_address, per_address_requests))  # Starlette's ASGI types
    served = wrap_app(capped, config.wsgi_max_body_size, "asgi")
    asyncio.run(worker_serve(served, config, sockets=Sockets([], [sock], [])))  # Ctrl-C stops it gracefully
    return 0


if __name__ == "__main__":
    sys.exit(main())
