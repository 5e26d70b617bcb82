"""The count of Burn's own tests ported here, printed at the end of a run (docs/burn-tests.md)."""

from __future__ import annotations

import pytest


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    ported: dict[tuple[str, str], set[str]] = {}
    for outcome in ("passed", "failed"):
        for report in terminalreporter.stats.get(outcome, []):
            burn = dict(report.user_properties).get("burn")
            if burn is not None and report.when == "call":
                ported.setdefault(burn, set()).add(outcome)
    if ported:
        passing = sum(outcomes == {"passed"} for outcomes in ported.values())
        terminalreporter.write_line(
            f"Burn's autodiff tests ported: {len(ported)} ({passing} passing on the plain autodiff device and under "
            "balanced checkpointing)"
        )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    marker = item.get_closest_marker("burn")
    if marker is not None:
        item.user_properties.append(("burn", tuple(marker.args)))
