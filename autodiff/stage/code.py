"""Python as coloured text: a lesson's program in a code block (`code_html`) and beside the stage's graph
(`code_lines`), with the token colours of both (`token_rules`).

Not `st.code`: its highlighter is a 1.5 MB module that registers some 300 languages each time a page loads,
about 270 ms of the browser's main thread here, and nothing after the first code block shows until it is done.
Python is split into tokens here by the standard library's own tokenizer; the colours are `token_rules`
(`.code-block .token.<kind>`, Prism's class names, so the hues keep their tested contrast).
"""

from __future__ import annotations

import functools
import io
import keyword
import tokenize
from html import escape

PUNCTUATION = set("()[]{},:;.")
CONSTANTS = {"True", "False", "None"}
# Python 3.12 splits an f-string into parts; 3.11 gives one STRING
F_STRING_PARTS = ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END")
STRING_TYPES = {tokenize.STRING, *(getattr(tokenize, part) for part in F_STRING_PARTS if hasattr(tokenize, part))}
LAYOUT_TYPES = {tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}


def code_html(source: str, python: bool = True) -> str:
    """`<pre class="code-block">`: one block per line, so a wrapped line continues indented under its own start
    (a hanging indent), not at the left edge where the next statement would begin."""
    return _coloured_html(source) if python else _block_html([(None, source)])


@functools.lru_cache(maxsize=32)  # a lesson's program, drawn on every rerun of its page: tokenized once per server
def _coloured_html(source: str) -> str:
    return _block_html(_python_segments(source))


Segment = tuple[str | None, str]  # (Prism's kind of token, or None for plain text; its text)


@functools.lru_cache(maxsize=32)
def code_lines(source: str) -> list[list[Segment]]:
    """`source` as Python, one list of segments per line: what the stage draws beside the graph as text (the browser
    sets each segment's text, so nothing of it is parsed as HTML)."""
    return _lines(_python_segments(source))


def _lines(segments: list[Segment]) -> list[list[Segment]]:
    lines: list[list[Segment]] = [[]]
    for kind, text in segments:
        first, *rest = text.split("\n")
        lines[-1].append((kind, first))
        lines += [[(kind, part)] for part in rest]
    if len(lines) > 1 and not any(text for _, text in lines[-1]):
        lines.pop()  # the source's final line break ends the last line, it does not start another
    return [[(kind, text) for kind, text in line if text] for line in lines]


def _block_html(segments: list[Segment]) -> str:
    return f'<pre class="code-block"><code>{"".join(_line_html(line) for line in _lines(segments))}</code></pre>'


def _line_html(line: list[Segment]) -> str:
    text = "".join(part for _, part in line)
    hang = len(text) - len(text.lstrip(" ")) + 4  # continuation rows start 4 columns right of the line's own text
    body = "".join(
        escape(part) if kind is None else f'<span class="token {kind}">{escape(part)}</span>'
        for kind, part in line
        if part
    )
    body = body or "\n"  # an empty line holds its break: else a copy merges the breaks around it, and loses it
    return f'<span class="line" style="padding-left: {hang}ch; text-indent: -{hang}ch">{body}</span>'


def _python_segments(source: str) -> list[Segment]:
    """The source cut into (kind, text): each token that has a colour with its Prism kind, the text between tokens
    (names, spaces, line breaks) with None. Source that does not tokenize comes back whole, uncoloured."""
    starts = [0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    segments: list[Segment] = []
    done = 0
    previous: tuple[str, str | None] = ("", None)  # the last token's text and kind
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            kind = _kind(token, *previous)
            if token.type not in LAYOUT_TYPES:
                previous = (token.string, kind)
            if kind is None:
                continue
            start = starts[token.start[0] - 1] + token.start[1]
            end = starts[token.end[0] - 1] + token.end[1]
            segments += [(None, source[done:start]), (kind, source[start:end])]
            done = end
    except (tokenize.TokenError, SyntaxError):
        return [(None, source)]
    return [*segments, (None, source[done:])]


def _kind(token: tokenize.TokenInfo, previous: str, previous_kind: str | None) -> str | None:
    """Prism's name for what the token is, or None for plain text (names, spaces)."""
    if token.type == tokenize.COMMENT:
        return "comment"
    if token.type in STRING_TYPES:
        return "string"
    if token.type == tokenize.NUMBER:
        return "number"
    if token.type == tokenize.NAME:
        if token.string in CONSTANTS:
            return "boolean"
        if keyword.iskeyword(token.string):
            return "keyword"
        if previous in ("def", "class"):
            return "function" if previous == "def" else "class-name"
        if previous_kind == "decorator" and previous == "@":
            return "decorator"
        return None
    if token.type == tokenize.OP:
        if token.string == "@" and not token.line[: token.start[1]].strip():  # first on its line: not a matmul
            return "decorator"
        return "punctuation" if token.string in PUNCTUATION else "operator"
    return None


# Code is coloured with Prism's class names. Streamlit's hues (keywords #1c83e1 = 3.8:1,
# numbers #29b09d = 2.6:1 on a code background) fail 4.5:1 in both themes. Mixing 45% of the theme's text colour
# into each hue darkens it on light and lightens it on dark: at least 4.8:1 in both (the smallest is green on
# light), hues still told apart.
TEXT_SHARE = 0.45  # of the theme's text colour in each token colour
TOKEN_HUES = {
    ".token.keyword, .token.function, .token.class-name": "#1c83e1",
    ".token.number": "#29b09d",
    ".token.string, .token.boolean": "#09ab3b",
    ".token.operator, .token.decorator": "#ed6f13",
    ".token.comment, .token.punctuation": "#808495",
}


def token_rules(block: str = ".code-block") -> str:
    """The token colours inside `block` (the page's code blocks, or the stage's program beside its graph)."""
    rules = []
    for tokens, hue in TOKEN_HUES.items():
        selector = ", ".join(f"{block} {token.strip()}" for token in tokens.split(","))
        rules.append(f"{selector} {{color: color-mix(in srgb, currentColor {TEXT_SHARE:.0%}, {hue});}}")
    return "\n".join(rules)
