"""Tests by layer: each folder under tests/ is a marker (`-m engine`, `-m "not browser"`, ...)."""

import os
import sys
from pathlib import Path

import pytest
from postgres import postgres_server  # noqa: F401 (one throwaway PostgreSQL cluster per session, for every folder)

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("engine", "course", "playground", "classroom", "app", "browser")
sys.path.insert(0, str(ROOT))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        layer = Path(item.fspath).relative_to(ROOT / "tests").parts[0]
        if layer in LAYERS:
            item.add_marker(getattr(pytest.mark, layer))
    # the browser's modules first: they are the longest (a server and a browser each), and xdist hands modules out in
    # this order, so the short ones fill the workers' ends instead of one long module running alone at the end
    items.sort(key=lambda item: "browser" not in item.keywords)


@pytest.fixture(scope="session", autouse=True)
def class_store_apart(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The class mode's store in a temporary SQLite file for the whole run (pages in this process and the servers
    the tests start), never the app's own data/ folder. A test that needs another store sets its own."""
    from classroom.live import DATABASE_ENV

    path = tmp_path_factory.mktemp("class-store") / "classroom.sqlite3"
    os.environ.setdefault(DATABASE_ENV, f"sqlite:///{path}")
