"""The two themes in .streamlit/config.toml and the colours ui/theme.py derives from them keep WCAG 2.1 AA contrast
(4.5:1 for text). The browser tests check the drawn page with axe; this checks the design itself, quickly."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib

from autodiff.stage.code import TEXT_SHARE, TOKEN_HUES
from ui.tables import VERDICT_TINTS

CONFIG = tomllib.loads((Path(__file__).resolve().parents[2] / ".streamlit" / "config.toml").read_text())


def _rgb(colour: str) -> tuple[int, int, int]:
    colour = colour.lstrip("#")
    return int(colour[0:2], 16), int(colour[2:4], 16), int(colour[4:6], 16)


def _luminance(rgb: tuple[float, float, float]) -> float:
    def linear(channel: float) -> float:
        c = channel / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: tuple[float, float, float], b: tuple[float, float, float]) -> float:
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_contrast_formula_matches_wcag_reference_values():
    assert contrast(_rgb("#000000"), _rgb("#ffffff")) == pytest.approx(21.0)
    assert contrast(_rgb("#1c83e1"), _rgb("#fafbfc")) == pytest.approx(3.76, abs=0.01)  # the figure


def test_the_app_designs_both_themes_and_pins_neither():
    assert "base" not in CONFIG["theme"]  # a base would override the browser's prefers-color-scheme
    assert {"light", "dark"} <= set(CONFIG["theme"])


@pytest.mark.parametrize("name", ["light", "dark"])
def test_text_and_primary_colours_reach_4_5_to_1(name):
    theme = {key: _rgb(value) for key, value in CONFIG["theme"][name].items() if str(value).startswith("#")}
    for background in ("backgroundColor", "secondaryBackgroundColor"):
        assert contrast(theme["textColor"], theme[background]) >= 4.5, background
        assert contrast(theme["primaryColor"], theme[background]) >= 4.5, background
    # the primary button's text: white on a dark primary (light theme), black on a light one (ui/theme.py)
    button_text = (255, 255, 255) if _luminance(theme["textColor"]) < 0.2 else (0, 0, 0)
    assert contrast(button_text, theme["primaryColor"]) >= 4.5


@pytest.mark.parametrize("name", ["light", "dark"])
def test_code_token_colours_reach_4_5_to_1(name):
    theme = CONFIG["theme"][name]
    text = _rgb(theme["textColor"])
    for hue in TOKEN_HUES.values():
        token = tuple(TEXT_SHARE * t + (1 - TEXT_SHARE) * h for t, h in zip(text, _rgb(hue), strict=True))
        for background in ("backgroundColor", "secondaryBackgroundColor"):
            assert contrast(token, _rgb(theme[background])) >= 4.5, (hue, background)


@pytest.mark.parametrize("name", ["light", "dark"])
def test_verdict_tints_keep_the_themes_text_readable(name):
    theme = CONFIG["theme"][name]
    page = _rgb(theme["backgroundColor"])
    for tint in VERDICT_TINTS.values():
        *rgb, alpha = (float(part) for part in tint.removeprefix("rgba(").removesuffix(")").split(","))
        cell = tuple(alpha * c + (1 - alpha) * p for c, p in zip(rgb, page, strict=True))
        assert contrast(_rgb(theme["textColor"]), cell) >= 4.5, tint
        assert contrast(cell, page) > 1.1, tint  # and the tint still shows against the page
