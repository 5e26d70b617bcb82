"""The Training stage's contract: the TypedDicts ui/training_stage.py sends and the JSDoc typedefs of
training_stage.js name the same keys, and a real payload has exactly those keys, nested; its colours are the
palette's."""

from __future__ import annotations

import re
import typing
from pathlib import Path

from test_palette import contrast
from test_stage_contract import js_fields, js_typedefs

from autodiff.stage.bundle import DECLARED, JS, module_order
from autodiff.stage.palette import BACKGROUND, BY_KEY, TEXT
from course.training import Training
from ui import training_stage
from ui.training_stage import SIGN_STATES, TRAINING_CSS, frame_wire

HERE = Path(training_stage.__file__).parent
COLOUR_LITERAL = re.compile(r"#[0-9a-fA-F]{3,8}\b|\brgba?\(\s*\d|\[\s*\d+,\s*\d+,\s*\d+\s*\]")  # hex, rgb(1, [1, 2, 3]
WIRE = {name: cls for name, cls in vars(training_stage).items() if typing.is_typeddict(cls)}  # both ways: Command


def test_python_and_the_browser_name_the_same_types_and_keys():
    js = js_typedefs((HERE / "training_stage.js").read_text())  # the module: its bundle drops comment blocks
    assert set(WIRE) == set(js)
    for name, cls in WIRE.items():
        assert set(cls.__annotations__) == set(js_fields(js[name])), name


def test_a_frame_sent_has_exactly_the_keys_its_type_names():
    training = Training()
    training.step()
    frame = frame_wire(training, training.frames[-1])
    assert set(frame) == set(training_stage.FrameWire.__annotations__)
    for node in frame["nodes"]:
        assert set(node) == set(training_stage.LiveNodeWire.__annotations__)
        assert set(node["value"]) == set(training_stage.Grid.__annotations__)
        assert len(node["value"]["data"]) == node["value"]["rows"] * node["value"]["cols"]


def over(background: str, colour: str, opacity: float) -> str:
    """`colour` laid over `background` at `opacity`, as the browser blends a cell's fill over its box."""
    pairs = [(int(background[i : i + 2], 16), int(colour[i : i + 2], 16)) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(b + (c - b) * opacity):02x}" for b, c in pairs)


def test_the_stage_s_colours_are_the_palette_s_and_keep_aa_in_both_themes():
    """training_stage.js and .css kept their own colours, outside the contrast-tested palette: every colour now comes
    from palette.py through the stylesheet's custom properties, each keeps 3:1 on the background (a point, the loss
    curve, an edge) and the theme's text keeps 4.5:1 on a cell at its strongest."""
    css = (HERE / "training_stage.css").read_text()
    assert not COLOUR_LITERAL.findall(css) and not COLOUR_LITERAL.findall((HERE / "training_stage.js").read_text())
    assert "--st-" not in css.replace("--st-font", "")  # the page's own colours are not the palette's (its primary)
    for theme in ("light", "dark"):
        selector = ".tl.dark" if theme == "dark" else ".tl"
        rule = re.search(rf"^{re.escape(selector)}\{{([^}}]*)\}}", TRAINING_CSS, re.M)
        assert rule, selector
        props = dict(p.split(":") for p in rule.group(1).split(";"))
        assert props["--tl-bg"] == BACKGROUND[theme] and props["--tl-text"] == TEXT[theme]
        for sign, state in SIGN_STATES.items():
            colour = props[f"--tl-{sign}"]
            assert colour == getattr(BY_KEY[state], theme).border
            assert contrast(colour, BACKGROUND[theme]) >= 3, (theme, sign)
            strongest = over(BACKGROUND[theme], colour, float(props["--tl-heat-max"]))
            assert contrast(TEXT[theme], strongest) >= 4.5, (theme, sign, strongest)


def test_the_stage_s_dom_and_theme_helpers_are_imported_not_copied():
    """training_stage.js kept its own copies of the stage's helpers under other names (`el` for view/dom.mjs's
    `element`, a `followTheme` of its own): it imports them, through the same bundle as the stage's hosts, and makes
    no element and reads no theme itself; each top-level name of the bundle is declared once (bundle.py refuses a
    second)."""
    modules = module_order(HERE / "training_stage.js")
    assert {JS / "view" / "dom.mjs", JS / "view" / "theme.mjs"} <= set(modules)
    own = (HERE / "training_stage.js").read_text()
    for primitive in ("document.createElement", "matchMedia", "--st-background-color", "innerHTML"):
        assert primitive not in own, primitive
    declared = [name for module in modules for name in DECLARED.findall(module.read_text())]
    assert len(declared) == len(set(declared))
    assert {"element", "svgElement", "followTheme"} <= set(declared) and "el" not in declared
