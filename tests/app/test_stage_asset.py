"""The pinned Graphviz asset the replay stage loads: present, unchanged, licensed, served by the app."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
from pathlib import Path

import tomllib

from autodiff.stage import GRAPHVIZ, GRAPHVIZ_SHA256, GRAPHVIZ_URL, export_html, replay_payload
from autodiff.stage.payload import GRAPH_FONTS
from course.programs import record_program

ROOT = Path(__file__).resolve().parents[2]


def test_the_pinned_graphviz_is_the_one_we_checked():
    asset = GRAPHVIZ
    assert hashlib.sha256(asset.read_bytes()).hexdigest() == GRAPHVIZ_SHA256
    assert "Apache License" in (asset.parent / "LICENSE").read_text()
    assert GRAPHVIZ_SHA256 in (asset.parent / "README.md").read_text()
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["enableStaticServing"] is True  # the app serves it itself: no CDN
    served = ROOT / GRAPHVIZ_URL.removeprefix("app/")  # the file under static/ is the one the package holds
    assert served.resolve() == asset.resolve()


def test_the_graph_font_is_pinned_licensed_and_served_by_the_app():
    assert set(GRAPH_FONTS) == {"400", "700"}  # the labels' weights: a value's line is bold
    for url in GRAPH_FONTS.values():
        served = ROOT / url.removeprefix("app/")  # what the app serves at that URL (enableStaticServing)
        checksum = hashlib.sha256(served.read_bytes()).hexdigest()
        assert f"sha256 of {served.name}: {checksum}" in (served.parent / "README.md").read_text()
        assert "SIL OPEN FONT LICENSE Version 1.1" in (served.parent / "LICENSE").read_text()
        assert served.read_bytes()[:4] == b"\x00\x01\x00\x00"  # a TrueType font, as the FontFace loads it


def test_the_saved_replay_is_one_file():  # that it asks the network for nothing: tests/browser/test_stage.py
    run = record_program("seed")
    html = export_html(replay_payload(run.before, run.recorder, run.names), "Replay: seed")
    assert html.count("<script") == 3 and "Graphviz" in html
    assert 'src="' not in html and "<link" not in html  # nothing loaded from elsewhere
    assert "</script" not in html.split('id="graphviz-module">')[1].split("</script>")[0]


def test_the_saved_replay_keeps_program_text_out_of_the_html_parser():
    run = record_program("seed")
    source = 'note = "<!--<script>"\n'  # would switch the parser's state inside the data's <script>
    html = export_html(replay_payload(run.before, run.recorder, run.names, source=source), "Replay")
    data = html.split('id="replay-data">')[1].split("</script>")[0]
    assert "<" not in data
    packed = json.loads(gzip.decompress(base64.b64decode(json.loads(data)["packed"])))  # as the page unpacks it
    assert "".join(text for _, text in packed["program"]["lines"][0]) == source.rstrip("\n")
