"""The page registry: every lesson reachable by its address, on a fresh server too, and listed on Home."""

from __future__ import annotations

from pathlib import Path

from apptest import app

from ui.navigation import LESSONS

ROOT = Path(__file__).resolve().parents[2]


def test_every_lesson_lives_in_a_section_folder_with_an_address_unlike_its_stem():
    for lesson in LESSONS:
        path = Path(lesson.path)
        assert path.parts[0] == "pages" and len(path.parts) == 3, lesson.path  # pages/<section>/<lesson>.py
        assert (ROOT / path).is_file()
        assert lesson.url_path != path.stem
    assert len({lesson.url_path for lesson in LESSONS}) == len(LESSONS)


def test_each_address_has_exactly_one_stand_in_that_runs_the_frame():
    stand_ins = {p.stem: p.read_text() for p in (ROOT / "pages").glob("*.py")}
    assert set(stand_ins) == {lesson.url_path for lesson in LESSONS if lesson.url_path}
    for text in stand_ins.values():
        assert 'runpy.run_path(str(Path(__file__).resolve().parents[1] / "frame.py")' in text


def test_home_lists_every_lesson_by_section():
    at = app()
    links = [link.proto.label for link in at.main.get("page_link")]
    assert links == [lesson.title for lesson in LESSONS if lesson.section]
    sections = [m.value for m in at.main.markdown if m.value.startswith("**") and m.value.endswith("**")]
    assert sections == ["**Backward**", "**Memory**", "**Train**", "**Check and play**", "**Teach**"]


def test_the_sidebar_links_every_page_by_section_in_place_of_streamlits_list():
    at = app()
    links = [link.proto.page for link in at.sidebar.get("page_link")]
    assert links == [lesson.url_path for lesson in LESSONS]  # every page, in the course's order
    sections = [m.value for m in at.sidebar.markdown if m.value.startswith("**")]
    assert sections == ["**Backward**", "**Memory**", "**Train**", "**Check and play**", "**Teach**"]
