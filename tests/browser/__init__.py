"""A real `streamlit run app.py` on a free loopback port, driven by Debian's Chromium via Playwright."""

import pytest

# pytest explains a failed `assert` only in the modules it rewrites (tests and conftest): the shared steps the tests
# call (a class end to end, its students, the probes) would fail with a bare AssertionError and no values
_HELPERS = ("a11y", "class_answers", "class_end_to_end", "class_probes", "class_student", "flood", "harness", "probes")
pytest.register_assert_rewrite(*(f"{__name__}.{helper}" for helper in (*_HELPERS, "visitor")))
