"""The active-memory timeline (ui/memory_timeline.py) on the Memory pages, through AppTest, and its stacking alone."""

from __future__ import annotations

import html
import pickle
import re

from apptest import app, button, memory_run, stage_data
from streamlit.testing.v1 import AppTest

from autodiff import Device, Distribution, Tensor
from autodiff.stage.palette import BACKGROUND, TEXT
from course.programs import memory_forward
from ui.memory_timeline import stack

MIB = 2**20


def timelines(at: AppTest) -> list[str]:
    """The markup of each timeline on the page (what its component puts in its shadow root)."""
    return [
        e.proto.bytes.decode()  # the markup travels as UTF-8 bytes
        for e in at.main
        if e.type == "bidi_component" and e.proto.component_name == "memory_timeline"
    ]


def bands(body: str, category: str) -> list[str]:
    """The words of each band of `category` a screen reader hears (its aria-label)."""
    return [html.unescape(m) for m in re.findall(rf'class="band b\d+ c-{category}"[^>]*aria-label="([^"]*)"', body)]


def downloads(at: AppTest) -> list:
    return [e for e in at.get("download_button") if e.proto.label == "Download memory snapshot (memory_viz)"]


def test_seed_passes_stack_two_bands_each_and_the_sweep_drops_them_at_once():
    ad = Device.numpy().autodiff()
    ad.record_memory_history()
    x = Tensor.random([512, 512], Distribution.Default, ad).require_grad()
    for _ in range(20):
        memory_forward(x)
    history = ad.memory_history
    assert history is not None
    before, _, peak = stack(history)
    memory_forward(x).backward()
    drawn, _, _ = stack(history)
    saved = [b for b in drawn if b.allocation.category == "activation" and b.allocation.size == MIB]
    assert len(saved) == 2 * 20 + 2  # two per pass, and the backward's own pass
    swept = [b for b in saved if b.end is not None]
    assert len({b.end for b in swept[:40]}) == 1  # the 20 abandoned passes vanish at one moment: the sweep
    tops = [b.steps[0][1] for b in saved[:40]]
    assert tops == [MIB * (1 + k) for k in range(40)]  # stacked on x, one above the other
    assert peak == 42 * MIB + 4 and len(before) > 40  # x, 19 passes' 2 MiB, the 20th whole: 3 MiB and its sum


def test_band_colours_keep_3_to_1_against_the_background_in_both_themes():
    from ui.memory_timeline import CATEGORIES, TEXT_SHARE

    def rgb(hex_colour: str) -> list[float]:
        return [int(hex_colour[k : k + 2], 16) / 255 for k in (1, 3, 5)]

    def luminance(channels: list[float]) -> float:
        linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    for theme in ("light", "dark"):
        background = luminance(rgb(BACKGROUND[theme]))
        for _, hue in CATEGORIES.values():
            mixed = [TEXT_SHARE * t + (1 - TEXT_SHARE) * h for t, h in zip(rgb(TEXT[theme]), rgb(hue), strict=True)]
            lighter, darker = sorted([luminance(mixed), background], reverse=True)
            assert (lighter + 0.05) / (darker + 0.05) >= 3.0, (theme, hue)


def test_memory_growth_draws_the_timeline_live_and_offers_the_snapshot():
    at = app("pages/memory/memory_growth.py")
    at.selectbox(key="memory_size").set_value(128).run()
    at.slider(key="memory_iterations").set_value(5).run()
    button(at, "Start").click().run()
    at.run()
    assert at.session_state["memory_running"] and timelines(at) and not downloads(at)  # drawn live, no file yet
    for _ in range(7):
        at.run()
    assert not at.exception and not at.session_state["memory_running"]
    body = timelines(at)[0]
    saved = bands(body, "activation")
    assert len(saved) == 10  # two per pass
    assert saved[0].startswith("64.0 KiB, activation, line 3 of the program (memory_forward): ")  # its return line
    assert "exp(x) output, saved by exp(x)·x for backward; made in forward pass 1; still held" in (saved[0])
    assert len(bands(body, "parameter")) == 1
    assert downloads(at)[0].proto.url  # the file is served
    snapshot = pickle.loads(at.session_state["memory_lab"].memory_snapshot())
    assert {"segments", "device_traces"} <= snapshot.keys()
    button(at, "Run one backward now").click().run()
    swept = bands(timelines(at)[0], "activation")
    assert sum("freed by the next backward's sweep" in words for words in swept) == 10


def test_a_band_names_its_nodes_box_as_the_stage_draws_it():
    """A band and the node it holds select each other (ui/memory_timeline.js) by the box's element id, which the
    band carries as graph_dot.py made it: the page's script never spells an id of its own."""
    at = memory_run(ticks=8)
    assert not at.session_state["memory_running"]  # stopped: the graph is drawn
    held = set(re.findall(r'class="band [^"]*" data-node="([^"]+)"', timelines(at)[0]))
    drawn = {node["element"] for node in stage_data(at, "static")["nodes"]}
    assert held & drawn, (held, drawn)  # the newest pass's bands name the boxes drawn


def test_memory_policies_draws_both_policies_on_one_time_axis():
    at = app("pages/memory/memory_policies.py")
    at.select_slider(key="policies_size").set_value(64).run()
    lazy, eager = timelines(at)
    assert "Burn (lazy sweep)" in lazy and "PyTorch (eager)" in eager
    assert len(bands(lazy, "activation")) == 2 * 21 and len(bands(eager, "activation")) == 2 * 21
    assert any("PyTorch's eager freeing" in words for words in bands(eager, "activation"))
    assert len(downloads(at)) == 2


def test_checkpointing_draws_a_timeline_per_strategy():
    at = app("pages/memory/checkpointing.py")
    plain, balanced = timelines(at)
    assert "No checkpointing" in plain and "Balanced checkpointing" in balanced
    # the loop's line, `y = (y * 0.5).tanh() * y + y.sigmoid()`, is line 6 of the chain program shown on the page
    assert any("line 6 of the program (elementwise_chain_program)" in words for words in bands(plain, "activation"))
    assert len(downloads(at)) == 2
