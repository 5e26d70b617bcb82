"""The stage: a graph and its recorded backward drawn step by step, built without Streamlit so that the app, an
exported HTML file and a notebook widget (`autodiff.notebook`) show one picture.

Python makes the payload (`payload.py`: what each node and edge says, each step's chain rule in numbers, the program
beside the graph); the browser modules in `js/` (one module per host, made by `bundle.py`) draw and play it, laying
the graph out with the pinned Graphviz in WebAssembly (`vendor/`). Not imported by `import autodiff`: the engine
alone stays as cheap to import as before.
"""

from .payload import (
    ATOL,
    GRAPHVIZ,
    GRAPHVIZ_SHA256,
    GRAPHVIZ_URL,
    PAYLOAD_KEYS,
    RTOL,
    STAGE_CSS,
    STAGE_JS,
    ClassroomLink,
    ClassWords,
    RevealedEvents,
    StagePayload,
    export_html,
    in_classroom,
    redacted,
    replay_payload,
    revealed_events,
    static_payload,
    wire,
    with_view,
)

__all__ = [
    "ATOL",
    "GRAPHVIZ",
    "GRAPHVIZ_SHA256",
    "GRAPHVIZ_URL",
    "PAYLOAD_KEYS",
    "RTOL",
    "STAGE_CSS",
    "STAGE_JS",
    "ClassroomLink",
    "ClassWords",
    "StagePayload",
    "export_html",
    "in_classroom",
    "redacted",
    "revealed_events",
    "RevealedEvents",
    "replay_payload",
    "static_payload",
    "wire",
    "with_view",
]
