"""`Referrer-Policy: no-referrer` on every answer the app gives (its pages, its files, the class's routes).

A class page's address once carried its secret (`?teacher=KEY`, `?seat=...`), and the browser sent that address as
the Referer of each of the page's own requests (every long poll among them), so whatever logged Referers kept the
secret. The secrets now live in the browser (ui/class_secret.py); the policy keeps any address a visitor opened,
whatever it holds, to the page that opened it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

POLICY = (b"referrer-policy", b"no-referrer")
_STARTS = ("http.response.start", "websocket.http.response.start")  # a WebSocket refused with an answer has headers


class NoReferrer:
    """ASGI middleware: adds the policy to every response's headers (replacing one the app set)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return

        async def send_with_policy(message: Message) -> None:
            if message["type"] in _STARTS:
                kept = [(name, value) for name, value in message.get("headers", []) if name.lower() != POLICY[0]]
                message = {**message, "headers": [*kept, POLICY]}
            await send(message)

        await self.app(scope, receive, send_with_policy)
