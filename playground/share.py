"""Programs in links: compressed into a URL-safe string, with a size limit."""

from __future__ import annotations

import base64
import binascii
import zlib

MAX_LINK_CHARS = 6_000  # what a link may carry after compression (browsers and chat apps cope well)
MAX_PROGRAM_CHARS = 4_000


class ShareError(ValueError):
    """A program too long to share, or a link that does not hold a program."""


def encode(source: str) -> str:
    packed = base64.urlsafe_b64encode(zlib.compress(source.encode("utf-8"), 9)).decode("ascii").rstrip("=")
    if len(packed) > MAX_LINK_CHARS:
        raise ShareError(
            f"This program is too long to share by link ({len(packed):,} characters once packed; "
            f"the limit is {MAX_LINK_CHARS:,})."
        )
    return packed


def decode(packed: str) -> str:
    if len(packed) > MAX_LINK_CHARS:
        raise ShareError("This link is too long to hold a Playground program.")
    try:
        raw = base64.b64decode(packed + "=" * (-len(packed) % 4), altchars=b"-_", validate=True)
        inflater = zlib.decompressobj()
        data = inflater.decompress(raw, MAX_PROGRAM_CHARS * 4 + 1)  # bounded: no zip bombs
        if inflater.unconsumed_tail or len(data) > MAX_PROGRAM_CHARS * 4:
            raise ShareError("The program in this link is too long.")
        if not inflater.eof:
            raise ShareError("This link does not hold a Playground program (it may have been cut short).")
        source = data.decode("utf-8")
    except (binascii.Error, zlib.error, UnicodeDecodeError, ValueError) as error:
        if isinstance(error, ShareError):
            raise
        raise ShareError("This link does not hold a Playground program (it may have been cut short).") from None
    if len(source) > MAX_PROGRAM_CHARS:
        raise ShareError(
            f"The program in this link is {len(source):,} characters long; the Playground takes at most "
            f"{MAX_PROGRAM_CHARS:,}, so it was not loaded."
        )
    return source
