"""Which client a request comes from: what the per-address limits count, for the pages and the push route alike."""

from __future__ import annotations

LOOPBACK = ("127.0.0.1", "::1")  # where deploy/'s nginx connects from


def client_address(peer: str, forwarded: str) -> str:
    """The address a browser connects from, given the connection's `peer` and its X-Forwarded-For header. Behind
    deploy/'s nginx (a loopback peer) it is the address nginx saw, the last one it added; a header from anyone else is
    not trusted."""
    seen = forwarded.rsplit(",", 1)[-1].strip() if peer in LOOPBACK else ""
    return seen or peer or "unknown"
