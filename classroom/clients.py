"""Which client a request comes from: what the per-address limits count, for the pages and the push route alike."""

from __future__ import annotations

import os

LOOPBACK = ("127.0.0.1", "::1")  # where deploy/'s nginx (or a tunnel on this machine) connects from
TRUSTED_PROXIES_ENV = "CLASSROOM_TRUSTED_PROXIES"  # the proxies' addresses, comma-separated (default: LOOPBACK)


def trusted_proxies() -> frozenset[str]:
    """The addresses whose X-Forwarded-For is believed: $CLASSROOM_TRUSTED_PROXIES, else this machine's loopback."""
    configured = os.environ.get(TRUSTED_PROXIES_ENV, "")
    return frozenset(part.strip() for part in configured.split(",") if part.strip()) or frozenset(LOOPBACK)


def client_address(peer: str, forwarded: str) -> str:
    """The address a browser connects from, given the connection's `peer` and its X-Forwarded-For header. Behind a
    trusted proxy (deploy/'s nginx on loopback, or one named in $CLASSROOM_TRUSTED_PROXIES) it is the address the proxy
    saw, the last one it added; a header from anyone else is not believed, so a client cannot pick its own address."""
    seen = forwarded.rsplit(",", 1)[-1].strip() if peer in trusted_proxies() else ""
    return seen or peer or "unknown"
