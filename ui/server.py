"""What the server process does once, for every session after it.

Streamlit runs a full garbage collection after every script run (`runner.postScriptGC`). With numpy, pandas,
MLX and the engine loaded, that walk covers about 90,000 long-lived objects (120,000 and some 75 ms of CPU on
every rerun of every session while Altair was loaded too, twice what a trivial page costs in all). `gc.freeze()`
moves what exists once the modules are loaded into a generation the collector no longer walks; the collection
after each run then visits only what sessions made since, and reference counting still frees everything as before.
"""

from __future__ import annotations

import contextlib
import gc
import importlib

# What the pages import, loaded before the freeze so that their module objects are frozen too.
PAGE_MODULES = ("course.labs", "course.scenarios", "playground.workers", "ui.charts", "ui.replay_view", "ui.run_view")
_frozen = False


def freeze_loaded_modules() -> None:
    """Load every page's modules (and MLX where it imports), then freeze the heap: once per server process."""
    global _frozen
    if _frozen:
        return
    for name in PAGE_MODULES:
        importlib.import_module(name)
    with contextlib.suppress(ImportError):  # the sidebar says why MLX is not there
        importlib.import_module("mlx.core")
    gc.collect()  # garbage from the imports is freed, not frozen
    gc.freeze()
    _frozen = True
