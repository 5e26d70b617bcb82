"""The app's pages, listed once: `app.py` hands them to `st.navigation` by section and draws the sidebar's links,
and Home lists them.

Why the layout of `pages/` looks as it does: until some session has run `st.navigation`, Streamlit serves a
`pages/` folder beside `app.py` as legacy pages, by file stem, without `app.py`. So every lesson lives in a
section folder (`pages/<section>/<lesson>.py`: no legacy address at all), its `url_path` differs from its
file stem, and for each address a stand-in `pages/<url_path>.py` runs `app.py`: a deep link that is a fresh
server's very first request gets the frame, and no "page not found" on the way.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st


@dataclass(frozen=True)
class Lesson:
    path: str  # the page script, relative to app.py
    title: str
    url_path: str  # "" for the default page
    summary: str  # one line, for Home's list
    section: str  # "" for pages shown above every section


# fmt: skip below: a table, one lesson per row
LESSONS: tuple[Lesson, ...] = (
    Lesson("pages/start/home.py", "Home", "", "Autodiff in five sentences and the seed's first program.", ""),
    Lesson("pages/backward/backward_traversal.py", "Backward traversal", "traversal",
           "Watch backward walk the tape, one step at a time, with the gradients it sends.", "Backward"),
    Lesson("pages/backward/gradient_consumption.py", "Gradient consumption", "gradients",
           "Which gradients exist after backward, and why the loss and `h` have none.", "Backward"),
    Lesson("pages/backward/tape_consumption.py", "Tape consumption", "tape",
           "Why a second backward through the same steps is refused, and what to do instead.", "Backward"),
    Lesson("pages/memory/memory_growth.py", "Memory growth", "memory",
           "How graphs you never backward keep their memory, and how one backward frees it.", "Memory"),
    Lesson("pages/memory/memory_policies.py", "Memory policies", "policies",
           "Burn's lazy sweep beside PyTorch's eager freeing and retain_graph.", "Memory"),
    Lesson("pages/memory/checkpointing.py", "Checkpointing", "checkpoints",
           "Keep less, recompute in backward: the same gradients for less memory.", "Memory"),
    Lesson("pages/train/training_loop.py", "Training", "training",
           "A small network learns two classes: a fresh graph each iteration, the loss falling, memory flat.",
           "Train"),
    Lesson("pages/check_and_play/check_mlx.py", "Check against MLX", "mlx",
           "Every gradient checked against MLX's own autodiff and finite differences.", "Check and play"),
    Lesson("pages/check_and_play/playground.py", "Playground", "play",
           "Write your own program, run it safely, replay its backward and share it by link.", "Check and play"),
    Lesson("pages/teach/class_mode.py", "Class", "class",
           "Teach with it: the room follows your steps on their phones and predicts each one; you see the answers "
           "on the graph.", "Teach"),
)  # fmt: skip


def navigation_pages() -> dict[str, list[st.Page]]:
    """The pages by section, for `st.navigation`."""
    sections: dict[str, list[st.Page]] = {}
    for lesson in LESSONS:
        if lesson.url_path:
            page = st.Page(lesson.path, title=lesson.title, url_path=lesson.url_path)
        else:
            page = st.Page(lesson.path, title=lesson.title, default=True)
        sections.setdefault(lesson.section, []).append(page)
    return sections


@st.cache_data(show_spinner=False, max_entries=1)
def sidebar_links() -> None:
    """The sidebar's navigation: one link per page under plain section names. `app.py` hides Streamlit's own
    navigation (`position="hidden"`) because its markup fails WCAG (a `ul` whose children are `div`s, `li`
    outside any list); links are plain anchors, so a screen reader lists them and Tab walks them in order.
    The same on every page: drawn once per server, then replayed (11 links and 5 headings, about 2 ms a run)."""
    for section, pages in navigation_pages().items():
        if section:
            st.markdown(f"**{section}**")
        for page in pages:
            st.page_link(page)


@st.cache_data(show_spinner=False, max_entries=1)
def lesson_list() -> None:
    """Home's list of the lessons by section, each a link and its one line: drawn once per server, then replayed."""
    for section in dict.fromkeys(lesson.section for lesson in LESSONS if lesson.section):
        st.markdown(f"**{section}**")
        for lesson in (lesson for lesson in LESSONS if lesson.section == section):
            left, right = st.columns([1, 3])
            with left:
                st.page_link(lesson.path, label=lesson.title)
            right.markdown(lesson.summary)


def lesson_intro(title: str, text: str) -> None:
    """A page's title and its opening paragraph (folded away in presenter mode: the stage comes first)."""
    st.title(title)
    if st.session_state.get("presenter"):
        with st.expander("What this lesson shows"):
            st.markdown(text)
    else:
        st.markdown(text)
