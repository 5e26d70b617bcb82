"""The Training lesson's pictures: the loss curve, memory per iteration and the decision boundary, each with a
sentence that says what it shows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from autodiff.stage.format import format_bytes
from course.training import Training

from .charts import SERIES_COLOURS, line_chart
from .state import presenter_mode

CLASS_NAMES = ("class 0", "class 1")
CLASS_COLOURS = (SERIES_COLOURS[1], SERIES_COLOURS[0])  # blue, orange: the pair the other charts use
X_AXIS_AT_LEAST = 100  # iterations: a fixed start, so a new run's curve grows in place


def training_charts(training: Training) -> None:
    """The decision boundary beside the loss curve (one above the other on a projector), memory per iteration
    under them."""
    history = training.history
    domain = (0.0, float(max(X_AXIS_AT_LEAST, training.iterations)))
    losses = pd.DataFrame(
        {"Iteration": [i.number for i in history], "Loss": [i.loss for i in history], "Curve": "loss"}
    )
    memory = pd.DataFrame(
        [
            row
            for i in history
            for row in (
                {"Iteration": i.number, "Bytes": i.graph_usage.bytes_in_use, "Moment": "before backward"},
                {"Iteration": i.number, "Bytes": i.usage.bytes_in_use, "Moment": "after the update"},
            )
        ],
        columns=["Iteration", "Bytes", "Moment"],
    )
    left, right = (st.container(), st.container()) if presenter_mode() else st.columns(2)
    with left:
        boundary_chart(training)
    if not history:  # an empty chart says nothing (and its empty marks have no text for a screen reader)
        right.caption("The loss curve and memory per iteration are drawn from the first iteration on.")
        return
    line_chart(
        losses,
        "Iteration",
        "Loss",
        "Curve",
        title="Training loss (cross-entropy)",
        y_title="Loss",
        x_domain=domain,
        x_ticks=5,
        container=right,
    )
    line_chart(
        memory,
        "Iteration",
        "Bytes",
        "Moment",
        title="Memory in use, each iteration",
        y_title="Memory",
        y_bytes=True,
        x_domain=domain,
        series_order=["before backward", "after the update"],
        x_ticks=5,
        container=right,
    )


def boundary_chart(training: Training, cells: int = 40) -> None:
    """The model's probability of class 1 over the plane (the background) and the training points (shape and colour
    by class): the boundary is where the background turns from blue to orange."""
    probability, xs, ys = training.boundary(cells)
    ix, iy = np.meshgrid(np.arange(cells), np.arange(cells))
    grid = pd.DataFrame(
        {
            "x": xs[ix.ravel()],
            "x2": xs[ix.ravel() + 1],
            "y": ys[iy.ravel()],
            "y2": ys[iy.ravel() + 1],
            "Probability of class 1": probability.ravel(),
        }
    )
    points = pd.DataFrame(
        {"x": training.points[:, 0], "y": training.points[:, 1], "Class": [CLASS_NAMES[c] for c in training.labels]}
    )
    presenter = presenter_mode()
    font = 18 if presenter else 12
    axis = {"title": None, "labelFontSize": font, "grid": False}
    x_scale, y_scale = {"domain": [float(xs[0]), float(xs[-1])]}, {"domain": [float(ys[0]), float(ys[-1])]}
    # one legend for shape and fill (the same field and title merge them): each class's colour and shape
    points_legend = {"orient": "bottom", "title": "Training points", "labelFontSize": font, "titleFontSize": font}
    after = f"after iteration {training.iterations}" if training.iterations else "before training"
    spec = {
        "title": {"text": f"Decision boundary {after}", "anchor": "start", "fontSize": font + 2, "limit": 0},
        "description": boundary_sentence(training),
        "datasets": {"grid": grid, "points": points},
        "layer": [
            {
                "data": {"name": "grid"},
                "mark": {"type": "rect", "opacity": 0.45},
                "encoding": {
                    "x": {"field": "x", "type": "quantitative", "axis": axis, "scale": x_scale},
                    "x2": {"field": "x2"},
                    "y": {"field": "y", "type": "quantitative", "axis": axis, "scale": y_scale},
                    "y2": {"field": "y2"},
                    "color": {
                        "field": "Probability of class 1",
                        "type": "quantitative",
                        "scale": {"domain": [0, 0.5, 1], "range": [CLASS_COLOURS[0], "#f1f3f5", CLASS_COLOURS[1]]},
                        "legend": {
                            "orient": "top",
                            "labelFontSize": font,
                            "titleFontSize": font,
                            "format": ".0%",
                            "gradientLength": 120,
                            "labelFlush": True,
                        },
                    },
                },
            },
            {
                "data": {"name": "points"},
                "mark": {
                    "type": "point",
                    "filled": True,
                    "size": 70 if presenter else 36,
                    "stroke": "#212529",
                    "strokeWidth": 0.6,
                    "opacity": 1,
                },
                "encoding": {
                    "x": {"field": "x", "type": "quantitative"},
                    "y": {"field": "y", "type": "quantitative"},
                    "shape": {
                        "field": "Class",
                        "type": "nominal",
                        "legend": points_legend,
                        "scale": {"domain": list(CLASS_NAMES), "range": ["circle", "square"]},
                    },
                    "fill": {
                        "field": "Class",
                        "type": "nominal",
                        "scale": {"domain": list(CLASS_NAMES), "range": list(CLASS_COLOURS)},
                        "legend": points_legend,
                    },
                    "tooltip": [{"field": "Class", "type": "nominal"}],
                },
            },
        ],
        "resolve": {"scale": {"color": "independent"}},
        "height": 360 if presenter else 280,
        "autosize": {"type": "fit-x", "contains": "padding"},
        "padding": {"top": 10, "left": 5, "right": 5, "bottom": 5},
    }
    st.vega_lite_chart(spec=spec, width="stretch")
    st.caption(boundary_sentence(training))


def boundary_sentence(training: Training) -> str:
    """The boundary picture in words, for everyone and for a screen reader."""
    right = (training.predict(training.points).argmax(axis=1) == training.labels).mean()
    return (
        f"The background is the model's probability of class 1 at each place: blue below 50 %, orange above. "
        f"Circles are class 0, squares class 1; {right:.0%} of the {len(training.labels)} points lie on their "
        "class's side of the boundary."
    )


def iteration_sentence(training: Training) -> str:
    """What the newest iteration did, in a sentence, from what was measured."""
    if not training.history:
        return "No iteration yet: press **One iteration** or **Play**."
    first, last = training.history[0], training.history[-1]
    reach = (
        f" That is {last.tape - first.tape} more than iteration 1: the graph reaches back through the previous "
        "update, made on the autodiff device."
        if last.tape > first.tape
        else ""
    )
    swept = (
        f" {last.abandoned} steps the previous update left on the autodiff device were abandoned: this backward's "
        "sweep freed them."
        if last.abandoned
        else ""
    )
    flat = len({i.usage.bytes_in_use for i in training.history}) == 1
    after = (
        "the same after every iteration so far"
        if flat
        else f"it was {format_bytes(first.usage.bytes_in_use)} after iteration 1"
    )
    return (
        f"Iteration {last.number}: the forward built a fresh graph of {last.tape} operations "
        f"({format_bytes(last.graph_usage.bytes_in_use)} in use before backward, with what its steps saved).{reach} "
        f"Backward consumed it; after the update {format_bytes(last.usage.bytes_in_use)} is in use "
        f"(the parameters and the data): {after}.{swept}"
    )
