"""Seeing reverse-mode autodiff: the app's frame (pages, sidebar, presenter mode, error guard), the script that
`app.py`'s `App` runs for every page.

Run: streamlit run app.py
"""

import streamlit as st

from autodiff import AutodiffError, memory_budget
from autodiff.device import mlx_unavailable_reason
from ui import press
from ui.navigation import navigation_pages, sidebar_links
from ui.server import freeze_loaded_modules, refuse_visitor_messages, return_freed_memory
from ui.state import (
    embed_mode,
    embed_styles,
    moved_from_another_replica,
    publish_presenter,
    restore_presenter,
    session_budget,
)
from ui.theme import accessible_styles

freeze_loaded_modules()  # once per server: Streamlit's collection after each run then skips the libraries
refuse_visitor_messages()  # before any widget is made: a forged choice never reaches a callback
return_freed_memory()  # sessions that leave give their memory back to the system, not only to the heap
restore_presenter()  # before anything reads it: a reload or a shared link keeps presenter mode

st.set_page_config(
    page_title="Seeing autodiff",
    page_icon="🔁",
    layout="wide",
    # a projector, or the stage alone in a slide: the whole width for the stage
    initial_sidebar_state="collapsed" if st.session_state.get("presenter") or embed_mode() else "auto",
)

# Accessibility (issue 18): the sidebar draws its own links (Streamlit's navigation list fails WCAG), and one
# style sheet keeps code colours, captions and the primary button above 4.5:1 in both themes.
sections = navigation_pages()
page = st.navigation(sections, position="hidden")
accessible_styles()

with st.sidebar:
    sidebar_links()
    st.toggle("Presenter mode", key="presenter", help="Larger text and graphs, fewer controls: for a projector.")
    publish_presenter()
    mlx_missing = mlx_unavailable_reason()
    st.selectbox(
        "Backend",
        ["numpy", "mlx"],
        key="backend",
        disabled=mlx_missing is not None,
        help="The array library under the engine. MLX runs on Metal on Apple silicon and on the CPU elsewhere; "
        "the engine evaluates each MLX op at once, so memory figures mean what they say.",
    )
    if mlx_missing:
        st.caption(f"MLX is not available: {mlx_missing}")
    st.caption(
        "A Python re-creation of the autodiff runtime of the Rust framework Burn. "
        "Everything you do here runs on your own device object: other visitors never see it."
    )

st.html("<style>[data-testid='stMainBlockContainer'] {padding-top: 2.5rem;}</style>")  # the stage fits higher up
if st.session_state.get("presenter"):
    st.html(
        "<style>html, body, [data-testid='stMarkdownContainer'] p, li, td {font-size: 1.25rem !important;}"
        " h1 {font-size: 2.2rem !important; padding-top: 0 !important;}"
        " [data-testid='stMainBlockContainer'] {padding: 3.75rem 1.5rem 1rem !important; max-width: none !important;}"
        " [data-testid='stSidebar'] {min-width: 15rem;} .code-block {font-size: 1.05rem;}</style>"
    )

if embed_mode():
    embed_styles()

if moved_from_another_replica():
    st.info(
        "The server that held your session stopped, and you are now on another one. This page started "
        "afresh: what you did before is not here, so run it again."
    )

try:
    with memory_budget(session_budget()):  # every device a lesson creates counts against this session's cap
        page.run()
except AutodiffError as error:
    st.error(f"The engine refused this: {error}\n\nChange the input above and try again; nothing else was lost.")
except Exception as error:  # the last guard: explain, never show a traceback
    st.error(
        f"Something unexpected went wrong ({type(error).__name__}: {error}). Your session is kept: "
        "press **R** to rerun, or pick another lesson in the sidebar."
    )
press.forget_unread()  # a whole run ran: a click its button did not read was for a button no longer drawn
