"""The palette: every state's border keeps 3:1 against the background (WCAG 1.4.11), node text keeps 4.5:1 on every
fill, and states stay apart for viewers with protanopia and deuteranopia (Machado et al. 2009 simulation)."""

import itertools
import re
from pathlib import Path

import numpy as np
import tomllib

from autodiff.stage.palette import BACKGROUND, FLOW, MUTED, PRIMARY, STATES, TEXT, stage_css

CONFIG = tomllib.loads((Path(__file__).resolve().parents[2] / ".streamlit" / "config.toml").read_text())

# Machado, Oliveira and Fernandes (2009), severity 1.0, on linear RGB
SIMULATIONS = {
    "protanopia": np.array(
        [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]]
    ),
    "deuteranopia": np.array(
        [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]]
    ),
}


def linear(colour: str) -> np.ndarray:
    rgb = np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)]) / 255
    return np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)


def luminance(rgb: np.ndarray) -> float:
    return float(rgb @ np.array([0.2126, 0.7152, 0.0722]))


def contrast(a: str, b: str) -> float:
    la, lb = sorted((luminance(linear(a)), luminance(linear(b))), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def lab(rgb: np.ndarray) -> np.ndarray:
    """CIELAB of a linear-RGB colour (D65)."""
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ np.clip(rgb, 0, 1)
    f = lambda t: np.where(t > 216 / 24389, np.cbrt(t), (24389 / 27 * t + 16) / 116)
    fx, fy, fz = f(xyz / np.array([0.95047, 1.0, 1.08883]))
    return np.array([116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)])


def test_borders_and_text_keep_their_contrast_in_both_themes():
    for theme in ("light", "dark"):
        for state in STATES:
            look = getattr(state, theme)
            assert contrast(look.border, BACKGROUND[theme]) >= 3, (theme, state.key, "border")
            assert contrast(TEXT[theme], look.fill) >= 4.5, (theme, state.key, "text")
            assert contrast(MUTED[theme], look.fill) >= 4.5, (theme, state.key, "detail text")
        assert contrast(FLOW[theme], BACKGROUND[theme]) >= 4.5, theme  # edge labels in the flow colour are text
        # the primary: a focus ring on the background, and a button of it labelled in the background's colour
        assert contrast(PRIMARY[theme], BACKGROUND[theme]) >= 4.5, theme


def test_the_palette_s_page_colours_are_the_app_theme_s():
    """The background, text and primary colours the pictures use are the ones the app's theme draws the page in."""
    for theme in ("light", "dark"):
        page = CONFIG["theme"][theme]
        assert (BACKGROUND[theme], TEXT[theme], PRIMARY[theme]) == (
            page["backgroundColor"],
            page["textColor"],
            page["primaryColor"],
        ), theme


def test_states_stay_apart_under_colour_vision_deficiencies():
    """Two states that share a line style must differ in colour for everyone: fills or borders at least 10 apart
    in CIELAB (ΔE76) after simulating protanopia and deuteranopia. States with different line styles are told apart
    by the line too."""
    for theme, (name, matrix) in itertools.product(("light", "dark"), SIMULATIONS.items()):
        for a, b in itertools.combinations(STATES, 2):
            if (a.dash, a.width) != (b.dash, b.width) or {a.key, b.key} == {"agrees", "leaf"}:
                continue  # told apart by the line (and a cross-check never shows Grad leaves' green beside it)
            la, lb = getattr(a, theme), getattr(b, theme)
            fill = np.linalg.norm(lab(matrix @ linear(la.fill)) - lab(matrix @ linear(lb.fill)))
            border = np.linalg.norm(lab(matrix @ linear(la.border)) - lab(matrix @ linear(lb.border)))
            assert max(fill, border) >= 10, (theme, name, a.key, b.key, fill, border)


def test_every_state_has_a_rule_in_both_themes():
    css = stage_css()
    for state in STATES:
        assert f"g.node.s-{state.key} > path" in css and f"--{state.key}-fill:{state.dark.fill}" in css


def test_the_stage_s_refusal_is_in_the_palette_s_refused_colour_readable_in_both_themes():
    """A stage that cannot show its data says so in words, in the refused state's colour (it had colours of its own,
    outside the contrast-tested palette); the stylesheet itself names no colour."""
    css, sheet = stage_css(), (Path(__file__).resolve().parents[2] / "autodiff" / "stage" / "stage.css").read_text()
    refused = next(state for state in STATES if state.key == "refused")
    assert f".stage-refused{{color:{refused.light.border}}}" in css
    assert f".stage-refused.dark{{color:{refused.dark.border}}}" in css
    for theme in ("light", "dark"):
        assert contrast(getattr(refused, theme).border, BACKGROUND[theme]) >= 4.5, theme  # it is text
    assert re.findall(r"#[0-9a-fA-F]{3,8}\b", sheet) == []
