"""The README a newcomer reads in one screen, and every relative link of it and of docs/ leads somewhere."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {slug(line.lstrip("#")) for line in page.read_text().splitlines() if line.startswith("#")}


def test_the_readme_fits_one_screen_of_reading():
    assert len(ROOT.joinpath("README.md").read_bytes()) <= 10_000


def test_every_relative_link_and_anchor_leads_somewhere():
    broken = []
    for page in PAGES:
        for target in LINK.findall(page.read_text()):
            if re.match(r"[a-z]+:", target):  # http(s), mailto: not this test's
                continue
            path, _, anchor = target.partition("#")
            destination = (page.parent / path).resolve() if path else page
            if not destination.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and destination.suffix == ".md" and anchor not in anchors(destination):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, broken


def test_every_docs_page_is_linked_from_the_readme_or_another_page():
    linked = {
        (page.parent / target.partition("#")[0]).resolve()
        for page in PAGES
        for target in LINK.findall(page.read_text())
        if not re.match(r"[a-z]+:", target)
    }
    assert [p.name for p in PAGES[2:] if p.resolve() not in linked] == []
