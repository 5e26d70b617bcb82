"""Every state a node can be in, how the pictures draw it, and what the legend says: one table for the stage's
CSS, its legend, and the tests of contrast and colour-vision separation.

Colour is never the only carrier: each state also has its own border line (solid, dashed, dotted, dash-dot, or a
thicker line) and its own words on the node (`kept`, `consumed`, `no gradient`, ...).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Look:
    fill: str
    border: str


@dataclass(frozen=True)
class State:
    key: str
    legend: str  # the legend's sentence
    dash: str  # the border's line: "" solid, else an SVG stroke-dasharray
    width: float  # the border's width (SVG units at scale 1)
    light: Look
    dark: Look


# fmt: skip below: a table, one state per row, its light and dark looks side by side
STATES: tuple[State, ...] = (
    State("leaf", "a leaf that asked for its gradient (require_grad): the container keeps it", "", 2,
          Look("#d3f9d8", "#2b8a3e"), Look("#12361d", "#69db7c")),
    State("pending", "op output: waiting for its step", "", 2,
          Look("#d0ebff", "#1864ab"), Look("#13304d", "#74c0fc")),
    State("current", "the step running now", "", 5,
          Look("#fff0e0", "#c2410c"), Look("#47270a", "#ff922b")),
    State("consumed", "op output: its step ran, its gradient was consumed", "7 4", 2,
          Look("#eceff1", "#495057"), Look("#26282d", "#adb5bd")),
    State("recomputed", "recomputed now from kept ancestors (checkpointing)", "", 5,
          Look("#f0ebff", "#6741d9"), Look("#2b2150", "#b197fc")),
    State("untracked", "untracked input: no gradient flows to it", "2 3", 2,
          Look("#f8f9fa", "#495057"), Look("#1d1f24", "#adb5bd")),
    State("unreached", "not reached by this backward: no gradient", "9 3 2 3", 2,
          Look("#ffffff", "#495057"), Look("#14171a", "#adb5bd")),
    State("abandoned", "abandoned: no live tensor needs it, yet it holds memory until a backward", "12 4", 2,
          Look("#ffe3c2", "#9c4a06"), Look("#4d2c07", "#ffa94d")),
    State("swept", "freed without running (a backward's sweep, or dropped)", "1 4", 2,
          Look("#ffffff", "#6c757d"), Look("#14171a", "#909296")),
    State("group", "a part of the program, folded into one box (double border): click it to open it", "", 2,
          Look("#fff3bf", "#7a5c00"), Look("#3d3200", "#ffd43b")),
    State("refused", "where a second backward was refused: the tape is consumed", "8 3", 5,
          Look("#ffe3e3", "#c92a2a"), Look("#4d1414", "#ff8787")),
    State("agrees", "cross-check: agrees with MLX and finite differences", "", 5,
          Look("#d3f9d8", "#2b8a3e"), Look("#12361d", "#69db7c")),
    State("differs", "cross-check: disagrees (see the table)", "3 2", 5,
          Look("#ffe3e3", "#c92a2a"), Look("#4d1414", "#ff8787")),
)  # fmt: skip
BY_KEY = {state.key: state for state in STATES}
EDGE_LEGEND = {
    "untracked_edge": "dashed edge: an untracked input (no gradient flows along it)",
    "flow": "a gradient being sent along this edge now",
}

BACKGROUND = {"light": "#ffffff", "dark": "#14171a"}  # the app theme's backgrounds (.streamlit/config.toml)
TEXT = {"light": "#1f2933", "dark": "#e6e9ec"}
MUTED = {"light": "#495057", "dark": "#c1c2c5"}  # still 4.5:1 on every fill
EDGE = {"light": "#5f6b76", "dark": "#a6adb5"}
FLOW = {"light": "#c2410c", "dark": "#ff922b"}  # a gradient being sent: the edge, its label, the moving dot
# the app theme's primary colour (.streamlit/config.toml): the Training stage's Play button (the background's colour
# its label) and its focus rings, as Streamlit draws its own
PRIMARY = {"light": "#c2410c", "dark": "#ff8a4c"}


def stage_css() -> str:
    """The custom properties and state rules the stage's stylesheet uses, in light and dark."""
    lines = []
    for theme, selector in (("light", ".stage"), ("dark", ".stage.dark")):
        props = [
            f"--bg:{BACKGROUND[theme]}",
            f"--text:{TEXT[theme]}",
            f"--muted:{MUTED[theme]}",
            f"--edge:{EDGE[theme]}",
            f"--flow:{FLOW[theme]}",
        ]
        for state in STATES:
            look = getattr(state, theme)
            props += [f"--{state.key}-fill:{look.fill}", f"--{state.key}-border:{look.border}"]
        lines.append(f"{selector}{{{';'.join(props)}}}")
    for state in STATES:
        stroke = (
            f"fill:var(--{state.key}-fill);stroke:var(--{state.key}-border);stroke-width:{state.width}px;"
            f"stroke-dasharray:{state.dash or 'none'}"
        )
        lines.append(f".stage g.node.s-{state.key} > path,.stage g.node.s-{state.key} > polygon{{{stroke}}}")
        lines.append(f".stage .swatch.s-{state.key}{{{stroke}}}")
    # a stage refused in words stands where the stage would be, outside it: its colour is the refused state's border
    # (4.5:1 as text on both backgrounds), dark when the host is (controller.mjs's refuse)
    refused = BY_KEY["refused"]
    lines.append(f".stage-refused{{color:{refused.light.border}}}.stage-refused.dark{{color:{refused.dark.border}}}")
    return "\n".join(lines)
