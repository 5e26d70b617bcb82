"""Memory curves: one line-chart helper (the app's two series colours, legend below) for every page."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from course.labs import MemoryPoint

SERIES_COLOURS = ["#e8590c", "#1971c2"]


def line_chart(
    data: pd.DataFrame,
    x: str,
    y: str,
    series: str,
    *,
    x_order: Sequence[str] | None = None,
    x_domain: tuple[float, float] | None = None,
    y_domain: tuple[float, float] | None = None,
    series_order: Sequence[str] | None = None,
    title: str | None = None,
    height: int = 280,
    tooltip: Sequence[str] = (),
    container: object = st,
) -> None:
    """One line per `series` value, points marked. `x_order` makes x an ordered category axis (labels
    such as "forward x5"); fixed domains keep a live chart from rescaling as it grows; `tooltip` names
    further columns to show on hover."""
    x_encoding: dict[str, object] = {"field": x, "type": "quantitative"}
    if x_order is not None:
        x_encoding = {"field": x, "type": "ordinal", "sort": list(x_order), "axis": {"labelAngle": -30, "title": None}}
    elif x_domain is not None:
        x_encoding["scale"] = {"domain": list(x_domain)}
    y_encoding: dict[str, object] = {"field": y, "type": "quantitative", "title": title or y}
    if y_domain is not None:
        y_encoding["scale"] = {"domain": list(y_domain)}
    names = list(series_order) if series_order is not None else list(dict.fromkeys(data[series]))
    spec = {
        "height": height,
        "mark": {"type": "line", "point": True},
        "encoding": {
            "x": x_encoding,
            "y": y_encoding,
            "color": {"field": series, "type": "nominal",
                      "scale": {"domain": names, "range": SERIES_COLOURS[: len(names)]},
                      "legend": {"orient": "bottom", "title": None, "columns": 1}},  # fits 320 px
            "strokeDash": {"field": series, "type": "nominal", "legend": None},
            "tooltip": [{"field": series}, {"field": x}, *({"field": f} for f in tooltip),
                        {"field": y, "format": ".2f"}],
        },
    }  # fmt: skip
    if title:
        spec["title"] = title
    container.vega_lite_chart(data, spec, width="stretch")


def memory_charts(history: list[MemoryPoint], iterations: int) -> None:
    """MiB in use and live buffers per forward pass, with fixed axes so the curves grow in place.
    On MLX, MLX's own active-memory counter is drawn beside the engine's accounting."""
    rows = []
    for p in history:
        common = {"Iteration": p.iteration, "Event": p.label}
        rows.append({**common, "Counter": "engine: MiB in use", "Value": p.usage.mib})
        rows.append({**common, "Counter": "engine: live buffers", "Value": p.usage.allocations})
        if p.backend_bytes is not None:
            rows.append({**common, "Counter": "MLX: active MiB", "Value": p.backend_bytes / 2**20})
    data = pd.DataFrame(rows)
    left, right = st.columns(2)
    charts = (
        (left, ["engine: MiB in use", "MLX: active MiB"], "Memory in use (MiB)"),
        (right, ["engine: live buffers"], "Live buffers"),
    )
    present = set(data["Counter"])
    for column, wanted, title in charts:
        counters = [c for c in wanted if c in present]  # MLX's counter only on the MLX backend
        part = data[data["Counter"].isin(counters)]
        top = max(1.0, float(part["Value"].max()) * 1.15)
        line_chart(part, "Iteration", "Value", "Counter", x_domain=(0, iterations), y_domain=(0, top),
                   series_order=counters, title=title, height=260, tooltip=["Event"], container=column)  # fmt: skip
