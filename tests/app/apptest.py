"""What the AppTest tests share: the app, its pages, and finders for buttons, graphs and tables."""

from __future__ import annotations

import base64
import gzip
import html
import json
import re
from pathlib import Path

import pandas as pd
from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df
from streamlit.testing.v1 import AppTest

from ui.navigation import LESSONS

APP = str(Path(__file__).resolve().parents[2] / "frame.py")
PAGES = [lesson.path for lesson in LESSONS if lesson.url_path != "play"]  # the Playground is tested on its own


def app(page: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    if page:
        at.query_params.clear()  # AppTest keeps query params across switch_page; a browser drops them
        at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def open_link(page: str, **params: str) -> AppTest:
    """A session opened by a shared link: `page` with query parameters, on its first visit of that page.
    (AppTest switches pages by script hash, which Streamlit resolves only once `app.py` has run, so the
    frame runs first, as it does in a browser.)"""
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    for name, value in params.items():
        at.query_params[name] = value
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def playground_error(at: AppTest) -> str:
    """The Playground's error alert (HTML-escaped text) as a person reads it; "" when there is none."""
    for element in at.get("html"):
        if 'class="playground-error"' in element.proto.body:
            return html.unescape(re.sub(r"<[^>]+>", "", element.proto.body))
    return ""


def code_text(block: str) -> str:
    """A code block's HTML (autodiff/stage/code.py) as a person reads it: each `line` row on its own line, tags
    gone, entities decoded (an empty row holds a line break of its own)."""
    return html.unescape(re.sub(r"<[^>]+>", "", re.sub(r'<span class="line"[^>]*>\n?', "\n", block)))[1:]


def code_blocks(at: AppTest) -> list[str]:
    """The text of each code block on the page."""
    return [code_text(e.proto.body) for e in at.get("html") if e.proto.body.startswith('<pre class="code-block">')]


def unpacked(data: dict) -> dict:
    """The stage's data as the browser reads it once unpacked (`wire` in autodiff/stage/payload.py, `unpack` in
    js/model/contract.mjs): the packed part, gzip-compressed JSON in base64, restored."""
    rest = {k: v for k, v in data.items() if k != "packed"}
    return {**json.loads(gzip.decompress(base64.b64decode(data["packed"]))), **rest} if "packed" in data else rest


def stages(at: AppTest) -> list[dict]:
    """The data every stage on the page was mounted with (what the browser lays out, and steps through)."""
    return [
        unpacked(json.loads(e.proto.json))
        for e in at.main
        if e.type == "bidi_component" and e.proto.component_name == "replay_stage"
    ]


def stage_data(at: AppTest, mode: str = "replay") -> dict:
    """The data the page's first stage of `mode` ("replay" or "static") was mounted with."""
    return next(data for data in stages(at) if data["mode"] == mode)


def node_states(data: dict) -> dict[int, str]:
    """Each node's state as the stage first draws it, by NodeId."""
    return {node["id"]: node["state"] for node in data["nodes"]}


def button(at: AppTest, label: str):
    matches = [b for b in at.button if b.label == label]
    assert matches, f"no button {label!r} among {[b.label for b in at.button]}"
    return matches[0]


def memory_run(
    mode: str = "autodiff", passes: int = 5, size: int = 128, at: AppTest | None = None, ticks: int | None = None
) -> AppTest:
    """Memory growth run to its end (`passes` passes of `size`, in `mode`), on a fresh app or `at`."""
    if at is None:
        at = app()
    at.query_params.clear()
    at.switch_page("pages/memory/memory_growth.py").run()
    at.selectbox(key="memory_size").set_value(size).run()
    at.slider(key="memory_iterations").set_value(passes).run()
    at.radio(key="memory_mode").set_value(mode).run()
    button(at, "Start").click().run()
    for _ in range(passes + 2 if ticks is None else ticks):
        at.run()  # each run is one tick of the live fragment
    assert not at.exception
    return at


def chart(at: AppTest, title: str) -> tuple[dict, pd.DataFrame]:
    """The Altair chart titled `title`: its Vega-Lite spec and the data it plots."""
    for element in at.get("vega_lite_chart"):
        spec = json.loads(element.proto.spec)
        if spec.get("title", {}).get("text") == title:
            return spec, convert_arrow_bytes_to_pandas_df(element.proto.datasets[0].data.data)
    raise AssertionError(f"no chart titled {title!r}")


def table(at: AppTest, first_column: str):
    for frame in at.table:
        if frame.value.columns[0] == first_column:
            return frame.value
    raise AssertionError(f"no table starting with column {first_column!r}")


def run_code(at: AppTest, code: str) -> AppTest:
    """Type `code` into the Playground's editor and press Run (the run's worker answers within the rerun)."""
    at.text_area(key="playground_editor").set_value(code).run()
    button(at, "Run").click().run()
    assert not at.exception
    return at
