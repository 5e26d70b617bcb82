"""Visitor text inside Markdown, shown as the characters typed: never emphasis, a link, HTML or a formula."""

from __future__ import annotations

import re


def code_span(text: str) -> str:
    """`text` as a CommonMark code span, whose content is never parsed: the fence is one backtick longer than the
    longest run inside, padded with a space where the text starts or ends with a backtick or a space (the parser
    strips one space each side). Line breaks become spaces: a blank line would end the span and the paragraph."""
    flat = re.sub(r"[\r\n]", " ", text)
    if not flat:
        return "(empty)"
    fence = "`" * (max((len(run) for run in re.findall(r"`+", flat)), default=0) + 1)
    pad = " " if flat[0] in "` " or flat[-1] in "` " else ""
    return f"{fence}{pad}{flat}{pad}{fence}"
