"""Charts: one Vega-Lite line-chart helper for every page, readable at every size and in presenter mode
(a scale on both axes, a short title, bytes in the unit that suits them)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from autodiff.stage.format import format_bytes
from course.labs import MemoryPoint, checkpointing_lesson, policy_memory_curves

from .state import SHARED_RESULTS, presenter_mode, shared_result
from .tables import data_table

SERIES_COLOURS = ["#e8590c", "#1971c2"]
BYTE_UNITS = (("MiB", 2**20), ("KiB", 2**10), ("B", 1))


def byte_unit(largest: float) -> tuple[str, int]:
    """The unit in which `largest` bytes reads as at least 1 (`MiB` for 41 MiB, `B` for 8 bytes)."""
    return next(((name, size) for name, size in BYTE_UNITS if largest >= size), BYTE_UNITS[-1])


def line_chart(
    data: pd.DataFrame,
    x: str,
    y: str,
    series: str,
    *,
    title: str,
    y_title: str,
    y_bytes: bool = False,
    x_title: str | None = None,
    x_order: Sequence[str] | None = None,
    x_domain: tuple[float, float] | None = None,
    series_order: Sequence[str] | None = None,
    tooltip: Sequence[str] = (),
    x_ticks: int | None = None,
    container: DeltaGenerator | None = None,
) -> None:
    """One line per `series` value, points marked, y from zero. `y_bytes`: `y` holds bytes, drawn in the unit
    that suits the largest (the axis title says which). `x_order` makes x an ordered category axis (labels such
    as "forward x5"); a fixed `x_domain` keeps a live chart from moving as it grows; `x_ticks` caps its labels.
    The Vega-Lite spec is written as plain data: building it through Altair (schema validation) cost ~100 ms a
    chart on every rerun of a live experiment."""
    data = data.copy()
    y_axis_title = y_title
    if y_bytes:
        unit, size = byte_unit(float(data[y].max()) if len(data) else 0.0)
        y_axis_title = f"{y_title} ({unit})"
        data[y_axis_title] = data.pop(y) / size  # the data says its unit too (the tooltip, a download)
        y = y_axis_title
    presenter = presenter_mode()
    font = 18 if presenter else 12
    if x_order is not None:
        axis = {"labelAngle": -45, "labelOverlap": False, "title": x_title}
        x_encoding = {"field": x, "type": "ordinal", "sort": list(x_order), "axis": axis}
    else:
        scale = {"domain": list(x_domain), "nice": False} if x_domain is not None else {"zero": False}
        axis = {"title": x_title or x, "tickMinStep": 1, "format": "d"}
        if x_ticks is not None:  # a long run: fewer labels than Vega's default, which overlap on a narrow chart
            axis["tickCount"] = x_ticks
        x_encoding = {"field": x, "type": "quantitative", "scale": scale, "axis": axis}
    top = float(data[y].max()) if len(data) else 0.0
    y_scale = {"domain": [0, max(top * 1.1, 1.0)], "nice": True}  # from zero; a flat zero still has a scale
    names = list(series_order) if series_order is not None else list(dict.fromkeys(data[series]))
    legend = None
    if len(names) > 1:  # one legend for colour and dash (the same field merges them): each entry draws its line
        # close under the axis: Vega's default offset and padding left a 50 px gap
        legend = {
            "orient": "bottom",
            "title": None,
            "labelLimit": 0,
            "columns": 1,
            "symbolType": "stroke",
            "symbolSize": 500,
            "symbolStrokeWidth": 3,
            "padding": 0,
            "offset": 8,
        }
    spec = {
        "title": {"text": title, "anchor": "start", "fontSize": font + 2, "limit": 0},
        "datasets": {"points": data},
        "data": {"name": "points"},
        "mark": {"type": "line", "point": {"size": 60 if presenter else 30}, "strokeWidth": 3 if presenter else 2},
        "encoding": {
            "x": x_encoding,
            "y": {
                "field": y,
                "type": "quantitative",
                "scale": y_scale,
                "axis": {"title": y_axis_title, "tickCount": 5},
            },
            "color": {
                "field": series,
                "type": "nominal",
                "legend": legend,
                "scale": {"domain": names, "range": SERIES_COLOURS[: len(names)]},
            },
            # the first series solid, the others dashed: they are drawn after it, so where two coincide the dashes
            # still show on top (a solid line drawn last hid a dashed one: Checkpointing's curves)
            "strokeDash": {
                "field": series,
                "type": "nominal",
                "legend": legend,
                "scale": {"domain": names, "range": [[1, 0]] + [[6, 4]] * (len(names) - 1)},
            },
            "tooltip": [{"field": f, "type": "nominal"} for f in (series, x, *tooltip)]
            + [{"field": y, "type": "quantitative", "format": ",.3~f"}],
        },
        # "fit-x": the width fits the page; the height is the plot's own, with axes, title and legend added
        # (Streamlit's default "fit" squeezed the plot to nothing under long rotated labels: flat, one tick)
        "height": 340 if presenter else 220,
        "autosize": {"type": "fit-x", "contains": "padding"},
        "padding": {"top": 10, "left": 5, "right": 5, "bottom": 5},  # room above the title: it is never clipped
        "config": {
            "axis": {"labelFontSize": font, "titleFontSize": font, "labelLimit": 0},
            "legend": {"labelFontSize": font},
        },
    }
    (st if container is None else container).vega_lite_chart(spec=spec, width="stretch")


def memory_charts(history: list[MemoryPoint], iterations: int, x_title: str = "Forward pass") -> None:
    """Memory in use and live buffers per forward pass (or per `x_title`), the x axis fixed so the curves grow
    in place. On MLX, MLX's own active-memory counter is drawn beside the engine's accounting."""
    memory, buffers = [], []
    for p in history:
        common = {x_title: p.iteration, "Event": p.label}
        memory.append({**common, "Counter": "engine", "Bytes": p.usage.bytes_in_use})
        if p.backend_bytes is not None:
            memory.append({**common, "Counter": "MLX active memory", "Bytes": p.backend_bytes})
        buffers.append({**common, "Counter": "engine", "Buffers": p.usage.allocations})
    left, right = (st.container(), st.container()) if presenter_mode() else st.columns(2)  # a projector: full width
    line_chart(
        pd.DataFrame(memory),
        x_title,
        "Bytes",
        "Counter",
        title="Memory in use",
        y_title="Memory",
        y_bytes=True,
        x_domain=(0, iterations),
        tooltip=["Event"],
        container=left,
    )
    line_chart(
        pd.DataFrame(buffers),
        x_title,
        "Buffers",
        "Counter",
        title="Live buffers",
        y_title="Live buffers",
        x_domain=(0, iterations),
        tooltip=["Event"],
        container=right,
    )


# A lesson's chart is the same for every student: drawn once per server for each program or size, backend and view
# (`presenter`: the chart's fonts), then replayed (Streamlit keeps the elements a cached function drew), not built
# again from a DataFrame on every page open.


@st.cache_data(show_spinner=False, max_entries=SHARED_RESULTS)
def policy_curves(size: int, backend: str, presenter: bool) -> None:
    """Memory policies: memory in use at each moment of the seed's experiment under each policy, and its table."""
    data = pd.DataFrame(shared_result(policy_memory_curves, size, backend))
    order = list(dict.fromkeys(data["Moment"]))
    line_chart(
        data,
        "Moment",
        "Bytes in use",
        "Policy",
        title="Memory in use at each moment",
        y_title="Memory",
        y_bytes=True,
        x_order=order,
    )
    wide = data.pivot(index="Moment", columns="Policy", values="Bytes in use").loc[order]
    data_table([{"Moment": moment, **{p: format_bytes(v) for p, v in row.items()}} for moment, row in wide.iterrows()])


@st.cache_data(show_spinner=False, max_entries=SHARED_RESULTS)
def checkpointing_curves(key: str, backend: str, presenter: bool) -> None:
    """Checkpointing: the device's memory after each backward step, without and with checkpointing."""
    line_chart(
        pd.DataFrame(shared_result(checkpointing_lesson, key, backend).memory_curves),
        "Step",
        "Bytes in use",
        "Strategy",
        title="Device memory after each backward step",
        y_title="Memory",
        y_bytes=True,
        x_title="Backward step",
    )
