"""Class mode end to end in Chromium (issues 27 and 43) on a real PostgreSQL class store: the steps of
class_end_to_end.py, in a module of its own so that another worker runs it beside test_class_mode.py's SQLite run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from postgres import new_database

from .class_end_to_end import a_class_end_to_end
from .harness import streamlit_server

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def class_url(tmp_path_factory: pytest.TempPathFactory, postgres_server) -> Iterator[str]:
    """The app on a fresh class store: a new database in the session's PostgreSQL cluster."""
    database = new_database(postgres_server)
    with streamlit_server(
        tmp_path_factory.mktemp("class-postgresql") / "server.log", env={"CLASSROOM_DATABASE": database}
    ) as url:
        yield url


def test_a_class_end_to_end_on_postgresql(browser, class_url):
    a_class_end_to_end(browser, class_url, "postgresql")
