"""axe-core in Chromium: the WCAG 2.1 A and AA rules, run on whatever a Playwright page shows now.

axe-core comes pinned inside `axe-playwright-python` (requirements.txt) and is injected into the page from
the installed package, so the check needs no network. axe walks open shadow roots, so components-v2
components (which render in one) are checked too.
"""

from __future__ import annotations

from typing import Any

from axe_playwright_python.base import AXE_SCRIPT

WCAG_21_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
BLOCKING = ("critical", "serious")  # the impacts a page must have none of

# TODO(issue 17): the replay stage is being rewritten with its own accessibility; until it lands, its root
# is left out of these runs. Remove this exclusion (and the argument below) when the stage is merged.
STAGE_ROOT = {"fromShadowDom": ["[data-testid='stBidiComponent']", ".stage"]}

def blocking_violations(page: Any, exclude: list[Any] | None = None) -> list[dict[str, Any]]:
    """The critical and serious violations of the WCAG 2.1 A/AA rules on the page as it is now.
    `exclude` lists axe contexts (CSS selectors, or `fromShadowDom` paths) left out of the run."""
    context = {"include": [["html"]], "exclude": exclude} if exclude else None
    options = {"runOnly": {"type": "tag", "values": WCAG_21_AA}, "resultTypes": ["violations"]}
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(AXE_SCRIPT)
    results = page.evaluate("([context, options]) => axe.run(context || document, options)", [context, options])
    return [v for v in results["violations"] if v["impact"] in BLOCKING]


def describe(violations: list[dict[str, Any]]) -> str:
    """One line per failing node: rule, impact, where, and axe's own summary of what to fix."""
    lines = []
    for violation in violations:
        for node in violation["nodes"]:
            target = " >> ".join(str(t) for t in node["target"])
            summary = node.get("failureSummary", "").replace("\n", " ")
            lines.append(f"{violation['id']} ({violation['impact']}) at {target}: {summary[:300]}")
    return "\n".join(lines)
