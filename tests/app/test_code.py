"""Code blocks (autodiff/stage/code.py): the text shown is the source exactly, tokens carry the kinds the theme
colours, any text is escaped, and no page uses `st.code` (whose highlighter costs every page load about 270 ms in
the browser)."""

from __future__ import annotations

import html
import re

import pytest
from apptest import PAGES, app, code_blocks, code_text

from autodiff.stage.code import TOKEN_HUES, code_html
from course.programs import CHECKPOINTING_PROGRAMS, PROGRAMS

TRICKY = '''@st.cache_data(show_spinner=False)
def f(a, b):
    """Two lines
    of docstring."""
    s = f"{a!r} and {b}"  # an f-string
    return a @ b, None, 1e-3, 0x1F

class Net:
    pass
'''


def tokens(block: str) -> list[tuple[str, str]]:
    return [
        (kind, html.unescape(text)) for kind, text in re.findall(r'<span class="token ([\w-]+)">([^<]*)</span>', block)
    ]


SOURCES = [p.source for p in PROGRAMS.values()] + [p.source for p in CHECKPOINTING_PROGRAMS.values()] + [TRICKY]


@pytest.mark.parametrize("source", SOURCES)
def test_the_block_shows_the_source_exactly(source):
    assert code_text(code_html(source)) == source.removesuffix("\n")


def test_tokens_get_the_kinds_a_reader_expects():
    found = tokens(code_html(TRICKY))
    expected = [
        ("decorator", "@"),
        ("decorator", "st"),
        ("keyword", "def"),
        ("function", "f"),
        ("string", '"""Two lines'),
        ("string", '    of docstring."""'),
        ("comment", "# an f-string"),
        ("keyword", "return"),
        ("operator", "@"),
        ("boolean", "None"),
        ("number", "1e-3"),
        ("number", "0x1F"),
        ("keyword", "class"),
        ("class-name", "Net"),
        ("punctuation", "("),
    ]
    assert [token for token in expected if token not in found] == []
    assert ("decorator", "b") not in found  # `a @ b` is a matmul, not a decorator
    assert any(kind == "string" and "{a!r}" in text for kind, text in found)  # an f-string, 3.11 or 3.12+


def test_every_kind_drawn_has_a_tested_colour():
    coloured = {token.strip().removeprefix(".token.") for tokens in TOKEN_HUES for token in tokens.split(",")}
    for source in SOURCES:
        assert {kind for kind, _ in tokens(code_html(source))} <= coloured


def test_wrapped_rows_hang_under_their_own_line():
    rows = re.findall(r'<span class="line" style="padding-left: (\d+)ch; text-indent: -(\d+)ch">', code_html(TRICKY))
    indents = [len(line) - len(line.lstrip(" ")) for line in TRICKY.removesuffix("\n").split("\n")]
    assert [int(pad) for pad, _ in rows] == [indent + 4 for indent in indents]
    assert all(pad == hang for pad, hang in rows)


def test_any_text_is_escaped_and_broken_source_is_shown_uncoloured():
    hostile = "<img src=x onerror=alert(1)> & <b>bold</b>"
    for block in (code_html(hostile, python=False), code_html(f"x = '{hostile}'"), code_html(f"({hostile}")):
        assert "<img" not in block and "<b>" not in block
        assert hostile in code_text(block)
    assert tokens(code_html("def (:\n  '''never closed")) == []  # does not tokenize: shown as it is


def test_no_page_draws_code_with_st_code():
    for page in PAGES:
        at = app(page)
        assert not at.code, page
    home = app()
    assert code_blocks(home) == [PROGRAMS["seed"].source.removesuffix("\n")]
