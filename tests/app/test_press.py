"""`ui/press.py`: a button's click is read once, by whichever run reaches the button first; a click no whole run read
(its button was not drawn) never acts later. The click that another rerun would have lost is pinned in a browser
(tests/browser/test_class_projector.py: a teacher's click just before the stage reports its step)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def _page() -> None:
    import streamlit as st

    from ui import press

    st.session_state.setdefault("acted", 0)
    if not st.session_state.get("hidden") and press.button("Act", "act"):
        st.session_state.acted += 1
    st.checkbox("Hide the button", key="hidden")
    st.write(f"acted {st.session_state.acted}")
    press.forget_unread()


def test_a_click_acts_once_and_a_click_on_a_button_no_longer_drawn_never_acts_later():
    at = AppTest.from_function(_page)
    at.run()
    at.button(key="act").click().run()
    assert at.session_state.acted == 1
    at.run()  # a rerun (a stage's report): the click was read already
    assert at.session_state.acted == 1
    # clicked, and hidden in the same run (the class moved on): the run passes the button's place without it ...
    at.button(key="act").click()
    at.checkbox(key="hidden").check().run()
    assert at.session_state.acted == 1
    at.checkbox(key="hidden").uncheck().run()  # ... and when the button is back, that click does not act
    assert at.session_state.acted == 1
    at.button(key="act").click().run()
    assert at.session_state.acted == 2
