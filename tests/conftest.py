"""Tests by layer: each folder under tests/ is a marker (`-m engine`, `-m "not browser"`, ...)."""

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
