"""The frame's style sheet for WCAG 2.1 AA in both themes (.streamlit/config.toml designs a light and a dark one).

Streamlit exposes no theme class or CSS variable to the page itself (only to components v2, as `--st-*`), and
a viewer may pick Light or Dark in the menu against the system's `prefers-color-scheme`. So every colour here is
derived from the text colour it inherits (`currentColor`), which is the theme's own: one rule holds in both themes
and follows the viewer's pick, with no media query.
"""

from __future__ import annotations

import streamlit as st

from autodiff.stage.code import token_rules

# The block: Streamlit's code font and size, a background of 4% text colour (between the theme's background and its
# secondary background, the two the token colours are tested on). Lines wrap, indentation kept: a block never
# scrolls sideways, so it needs no keyboard focus (WCAG 2.1.1), down to 320 px.
_CODE_BLOCK = (
    ".code-block {font: 0.875rem/1.6 'Source Code Pro', monospace; margin: 0 0 1rem; padding: 1rem;"
    " border-radius: 0.5rem; background: color-mix(in srgb, currentColor 4%, transparent);"
    " white-space: pre-wrap; overflow-wrap: anywhere;}"
    " .code-block code {font: inherit; background: none; padding: 0; color: inherit;}"
    " .code-block .line {display: block; min-height: 1.6em;}"  # an empty line keeps its height
)

# The primary button: white text on the light theme's dark orange, black text on the dark theme's light orange
# (Streamlit keeps it white in both, 2.3:1 on dark). `currentColor` here is the inherited theme text colour:
# dark text (channels under 128) gives white, light text gives black.
_BINARY = "clamp(0, (128 - r) * 1000, 255)"
_PRIMARY_BUTTON = (  # a form's primary submit button too (the Class page's)
    "[data-testid='stBaseButton-primary'], [data-testid='stBaseButton-primaryFormSubmit'] "
    f"{{color: rgb(from currentColor {_BINARY} {_BINARY} {_BINARY}) !important;}}"
)

# Captions are the text colour at opacity 0.6 (4.0:1 on white): 0.8 keeps them lighter and above 4.5:1.
_CAPTIONS = "[data-testid='stCaptionContainer'] {opacity: 0.8 !important;}"

# A collapsed sidebar only slides off the left edge: its links still take Tab focus (focus lands out of sight,
# WCAG 2.4.7) and its squeezed content scrolls. Hidden while collapsed, it leaves the tab order and the page.
# Collapsed, it is still 300 px wide in the layout's flow (only moved out of sight): out of the flow, so the page uses
# the whole width (presenter mode's projector, issue 26: a 300 px empty band at the left otherwise).
_COLLAPSED_SIDEBAR = (
    "[data-testid='stSidebar'][data-collapsed='true'] {visibility: hidden; position: absolute !important;}"
)

# Tables (st.table) likewise scroll sideways in an unfocusable box on a phone or at 200% zoom: cells wrap, and on
# a narrow screen (640 CSS px is 1280 px at 200%) even inside a word, so the table fits its column (WCAG 1.4.10
# wins over whole words there: keeping headers whole pushed tables past a 320 px screen).
_TABLE_CELLS = "[data-testid='stTable'] :is(th, td), [data-testid='stTable'] :is(th, td) *"
_TABLE_WRAP = (
    f"{_TABLE_CELLS} {{white-space: normal !important;}}\n"
    f"@media (max-width: 640px) {{{_TABLE_CELLS} {{overflow-wrap: anywhere !important;}}}}"
)

# Widget labels and page links are cut to one line with an ellipsis: at 320 px or 200% zoom the end of a long
# label is lost (WCAG 1.4.10). Let them wrap.
_LABEL_WRAP = (
    "[data-testid='stWidgetLabel'] :is([data-testid='stMarkdownContainer'], p), "
    "[data-testid='stPageLink-NavLink'] :is([data-testid='stMarkdownContainer'], p) "
    "{white-space: normal !important; text-overflow: clip !important; overflow-wrap: anywhere;}"
)

# Keyboard focus must show (WCAG 2.4.7). Streamlit draws nothing on a focused page link or element-toolbar
# button, and a toggle's, checkbox's or radio's real input is invisible: outline them (or their label) in the
# text colour, which has the text's contrast in both themes.
_FOCUS = (
    "a:focus-visible, button:focus-visible, [role='button']:focus-visible, summary:focus-visible, "
    "label:has(input:is([type='checkbox'], [type='radio']):focus-visible) "
    "{outline: 2px solid currentColor !important; outline-offset: 2px !important;}"
)

# A page's bar that stays above the stage while the page scrolls (the Class page's teacher controls in presenter
# mode: the room code, ask, close and reveal in view with the whole graph on one projector screen). Under Streamlit's
# toolbar; the stage paints it with the page's background and fits the rest of the screen below it
# (js/view/viewport.mjs `stickyBar`).
_STAGE_BAR = ".st-key-stage_bar {position: sticky; top: 3.75rem; z-index: 990; padding-bottom: 0.25rem;}"

# The class page's secret reader (ui/class_secret.py) draws nothing: its empty box takes no gap above the title.
_NOTHING_DRAWN = ".st-key-class_secret {display: none;}"

ACCESSIBLE_CSS = "\n".join(
    [
        token_rules(),
        _PRIMARY_BUTTON,
        _CAPTIONS,
        _CODE_BLOCK,
        _TABLE_WRAP,
        _COLLAPSED_SIDEBAR,
        _LABEL_WRAP,
        _FOCUS,
        _STAGE_BAR,
        _NOTHING_DRAWN,
    ]
)


def accessible_styles() -> None:
    """Draw the frame's style sheet (once per run, from app.py)."""
    st.html(f"<style>{ACCESSIBLE_CSS}</style>")
