"""Where phones in the room open the Class page: the join link and its QR code never name this computer itself.

A page opened at http://localhost:8501 knows only its own address, which every phone reads as the phone. The address
students can use is the public one `python -m classroom.serve` (or a host's operator) puts in $CLASSROOM_PUBLIC_URL,
else the page's own address when its host is one other machines can reach (a teacher who opened the network address,
a hosted app), else unknown: the page then says so in `UNREACHABLE` instead of showing a link no phone can open.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

from classroom.serve import PUBLIC_URL_ENV, is_local_host

UNREACHABLE = (
    "Phones in the room cannot open this address: it names this computer itself, so this page shows no join link. "
    "Open this page at the computer's network address, or, to teach a room, stop this server and run "
    "`python -m classroom.serve`: it prints the address students open."
)


def public_base(environ: Mapping[str, str]) -> str | None:
    """$CLASSROOM_PUBLIC_URL without its trailing slash, when it is an http(s) address with a host; else None."""
    value = environ.get(PUBLIC_URL_ENV, "").strip()
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"


def join_address(page_url: str | None, environ: Mapping[str, str]) -> str | None:
    """The address of this page (no query) that students can open, or None when none is known.

    `page_url` is the page's address in the teacher's browser (`st.context.url`: scheme, host, path, no query). The
    public address wins (its path is the app's root, so the page's last path segment, `class`, goes after it); a page
    whose own host others reach is kept as it is."""
    page = urlsplit(page_url or "")
    public = public_base(environ)
    if public is not None:
        name = page.path.rstrip("/").rsplit("/", 1)[-1] or "class"
        return f"{public}/{name}"
    if page.scheme in ("http", "https") and page.hostname and not is_local_host(page.hostname):
        return f"{page.scheme}://{page.netloc}{page.path}"
    return None
