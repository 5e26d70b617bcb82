"""The still picture a notebook's output keeps for where no kernel runs (autodiff/stage/still.py): whatever the
graph, every node is drawn once, whole, inside the picture, no two boxes overlap, and every edge runs up from its
input to the node that uses it, as the stage draws a graph (inputs at the bottom)."""

from __future__ import annotations

import re
from xml.etree import ElementTree

from hypothesis import given, settings
from hypothesis import strategies as st

from autodiff.stage.graph_dot import Picture, PictureEdge, PictureNode
from autodiff.stage.still import Still, layout, still_svg

SVG = "{http://www.w3.org/2000/svg}"


@st.composite
def pictures(draw) -> Picture:
    """A random graph as a snapshot's picture: node k's inputs are earlier nodes, as a tape's are."""
    count = draw(st.integers(1, 24))
    nodes, edges = [], []
    for k in range(count):
        title = draw(st.text("abcxyz·+= ()", min_size=1, max_size=30))
        nodes.append(
            PictureNode(
                k, f"n{k}", title, "value [1.0]", None, "waiting for its step", None, f"NodeId({k}) · op", "pending"
            )
        )
        inputs = draw(st.lists(st.integers(0, k - 1), max_size=3)) if k else []
        for i, source in enumerate(inputs):  # repeats allowed: x * x has two edges from x
            edges.append(PictureEdge(f"e{source}_{k}_{i}", draw(st.booleans()), source, k))
    return Picture(tuple(nodes), tuple(edges))


@settings(max_examples=60, deadline=None)
@given(pictures())
def test_every_node_is_drawn_once_inside_the_picture_and_no_two_overlap(pic: Picture):
    placed, paths, width, height = layout(pic)
    assert sorted(box.key for box in placed) == sorted(node.element for node in pic.nodes)
    for box in placed:
        assert box.x - box.width / 2 >= 0 and box.x + box.width / 2 <= width + 1e-6
        assert box.y - box.height / 2 >= 0 and box.y + box.height / 2 <= height + 1e-6
    for a in placed:
        for b in placed:
            if a.key < b.key:
                apart_x = abs(a.x - b.x) >= (a.width + b.width) / 2
                apart_y = abs(a.y - b.y) >= (a.height + b.height) / 2
                assert apart_x or apart_y, (a.key, b.key)
    for _, chain, _ in paths:
        # up from the input, one rank at a time (a bend point on every rank it crosses), to its user
        assert [box.rank for box in chain] == list(range(chain[0].rank, chain[-1].rank + 1))
        assert all(low.y > high.y for low, high in zip(chain, chain[1:], strict=False))
    assert len(paths) == len(pic.edges)


@settings(max_examples=30, deadline=None)
@given(pictures())
def test_the_svg_is_well_formed_and_says_every_title_as_text(pic: Picture):
    svg = ElementTree.fromstring(still_svg(pic, "a caption"))
    texts = [t.text for t in svg.iter(f"{SVG}text")]
    for node in pic.nodes:
        assert node.title in texts
    assert len(list(svg.iter(f"{SVG}path"))) == len(pic.edges) + 2  # each edge, and the two arrowheads' shapes
    assert svg.get("aria-label") == "a caption"


def test_text_from_a_visitor_stays_text():
    node = PictureNode(
        0, "n0", '<script>alert("x")</script>', "value [1.0]", None, "asked for", None, "NodeId(0) · x", "leaf"
    )
    still = Still(Picture((node,), ()), 'a "caption" & <b>', (('<img src=x onerror="1">', "[1.0]"),))
    page = still.html('" onload="x')
    assert "<script>" not in page and "<img" not in page and "<b>" not in page
    assert re.search(r'data-autodiff-still="&quot; onload=&quot;x"', page)
    assert "Gradients kept" in page and "[1.0]" in page
