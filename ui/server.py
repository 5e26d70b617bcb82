"""What the server process does once, for every session after it: a frozen heap, and messages a visitor should not
send refused.

Streamlit runs a full garbage collection after every script run (`runner.postScriptGC`). With numpy, pandas,
MLX and the engine loaded, that walk covers about 90,000 long-lived objects (120,000 and some 75 ms of CPU on
every rerun of every session while Altair was loaded too, twice what a trivial page costs in all). `gc.freeze()`
moves what exists once the modules are loaded into a generation the collector no longer walks; the collection
after each run then visits only what sessions made since, and reference counting still frees everything as before.
"""

from __future__ import annotations

import ast
import contextlib
import ctypes
import ctypes.util
import gc
import importlib
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from streamlit.elements.widgets.multiselect import MultiSelectSerde
from streamlit.elements.widgets.radio import RadioSerde
from streamlit.elements.widgets.selectbox import SelectboxSerde
from streamlit.proto.ClientState_pb2 import ClientState
from streamlit.runtime.app_session import AppSession
from streamlit.runtime.state.common import is_element_id

from .navigation import LESSONS

# Loaded before the freeze so that their module objects are frozen too: besides each page's own imports (read from
# its file), what is imported on first use (the MLX check's module, a Styler's jinja2, a pivot's reshape, a button
# icon's names). Each left out is walked again by the collection after every run of every session.
LAZY_MODULES = (
    "autodiff.crosscheck",
    "pandas.core.reshape.reshape",
    "pandas.io.formats.style",
    "streamlit.material_icon_names",
)
_frozen = False
ROOT = Path(__file__).resolve().parents[1]  # where app.py and pages/ are


def page_modules() -> list[str]:
    """The modules every page imports at its top level (`from x import y`, `import x`), read from the page files."""
    found: dict[str, None] = {}
    for lesson in LESSONS:
        tree = ast.parse((ROOT / lesson.path).read_text())
        for statement in tree.body:
            if isinstance(statement, ast.ImportFrom) and statement.module and not statement.level:
                found[statement.module] = None
            elif isinstance(statement, ast.Import):
                found.update(dict.fromkeys(alias.name for alias in statement.names))
    return list(found)


def freeze_loaded_modules() -> None:
    """Load every page's modules (and MLX where it imports), then freeze the heap: once per server process."""
    global _frozen
    if _frozen:
        return
    for name in [*page_modules(), *LAZY_MODULES]:
        importlib.import_module(name)
    with contextlib.suppress(ImportError):  # the sidebar says why MLX is not there
        importlib.import_module("mlx.core")
    gc.collect()  # garbage from the imports is freed, not frozen
    gc.freeze()
    _frozen = True


TRIM_EVERY_S = 10.0  # how often the server hands freed heap back to the system
_trimming = False


def return_freed_memory() -> None:
    """Once per server process: a thread that, every `TRIM_EVERY_S`, collects garbage and asks glibc to return the
    free parts of its heaps (`malloc_trim`). Sessions that leave free their engines at once, but glibc keeps the
    pages in each thread's arena: 30 held sessions had left a replica at 716 MiB 100 s after they closed (from
    257). Elsewhere than glibc, nothing to do."""
    global _trimming
    if _trimming:  # before find_library, which runs `ldconfig -p` in a child process on every call
        return
    libc_name = ctypes.util.find_library("c")
    if libc_name is None:
        return
    libc = ctypes.CDLL(libc_name)
    if not hasattr(libc, "malloc_trim"):
        return
    _trimming = True

    def trim() -> None:
        while True:
            time.sleep(TRIM_EVERY_S)
            gc.collect()
            libc.malloc_trim(0)

    threading.Thread(target=trim, daemon=True, name="return-freed-memory").start()


def refuse_visitor_messages() -> None:
    """Once per server process (idempotent). The browser only ever sends one of a choice widget's options, but a
    script can send any string: Streamlit hands an unknown one to the page as the value (a forged program name
    reached `PROGRAMS[name]`, and the alert quoted it). Here a select box or radio value that is not among its options
    reads as the widget's default, and a multiselect keeps only real options, before any callback sees them (this
    app never lets a visitor type a new option).

    Streamlit's developer-menu messages do nothing: `clear_cache` emptied the cache every session shares (one
    socket looping it made Memory policies recompute its curves 61 times in 20 s), `load_git_info` runs git, and
    `set_run_on_save` reruns every session on each save of a file. A widget state under an id Streamlit never makes
    is dropped."""
    # Streamlit's own methods, replaced on its classes on purpose: the ignores say so to mypy
    for serde in (SelectboxSerde, RadioSerde):
        if not getattr(serde.deserialize, "refuses_unknown", False):
            serde.deserialize = _known_or_default(serde.deserialize)  # type: ignore[method-assign,assignment]
    if not getattr(MultiSelectSerde.deserialize, "refuses_unknown", False):
        MultiSelectSerde.deserialize = _known_only(MultiSelectSerde.deserialize)  # type: ignore[method-assign,assignment]
    if not getattr(AppSession._handle_rerun_script_request, "refuses_unknown", False):
        AppSession._handle_rerun_script_request = _element_ids_only(  # type: ignore[method-assign,assignment]
            AppSession._handle_rerun_script_request
        )
    for handler in (
        "_handle_clear_cache_request",
        "_handle_git_information_request",
        "_handle_set_run_on_save_request",
    ):
        setattr(AppSession, handler, _ignored)


def _known_or_default(deserialize: Callable[[Any, str | None], Any]) -> Callable[[Any, str | None], Any]:
    def known_or_default(serde: Any, ui_value: str | None) -> Any:
        if ui_value is not None and ui_value not in serde.formatted_option_to_option_index:
            ui_value = None  # Streamlit's own path for "no value": the default option
        return deserialize(serde, ui_value)

    known_or_default.refuses_unknown = True  # type: ignore[attr-defined]
    return known_or_default


def _known_only(deserialize: Callable[[Any, list[str] | None], Any]) -> Callable[[Any, list[str] | None], Any]:
    def known_only(serde: Any, ui_value: list[str] | None) -> Any:
        if ui_value is not None:
            ui_value = [value for value in ui_value if value in serde.formatted_option_to_option_index]
        return deserialize(serde, ui_value)

    known_only.refuses_unknown = True  # type: ignore[attr-defined]
    return known_only


def _element_ids_only(handle: Callable[[Any, ClientState | None], None]) -> Callable[[Any, ClientState | None], None]:
    """Widget states under an id Streamlit never makes (a script naming a widget by its key: Streamlit took it for
    a widget and failed in the sidebar with a traceback) are dropped before the rerun."""

    def element_ids_only(session: Any, client_state: ClientState | None = None) -> None:
        if client_state is not None:
            widgets = client_state.widget_states.widgets
            forged = [w for w in widgets if not is_element_id(w.id)]
            for widget in forged:
                widgets.remove(widget)
        handle(session, client_state)

    element_ids_only.refuses_unknown = True  # type: ignore[attr-defined]
    return element_ids_only


def _ignored(*_: object) -> None:
    """A developer-only message from a visitor: nothing happens."""
