"""The effective configuration of `streamlit run app.py` from the project's folder: production settings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OPTIONS = (
    "server.address",
    "server.enableXsrfProtection",
    "server.runOnSave",
    "server.fileWatcherType",
    "server.disconnectedSessionTTL",
    "server.enableAgentApi",
    "server.maxMessageSize",
    "server.maxWidgetStateSize",
    "client.showErrorDetails",
    "client.toolbarMode",
    "browser.gatherUsageStats",
    "runner.fastReruns",
)
READ = f"""
import json
from streamlit import config
config.get_config_options(force_reparse=True)
print(json.dumps({{name: config.get_option(name) for name in {OPTIONS!r}}}))
"""


def effective_config() -> dict[str, object]:
    # Streamlit reads .streamlit/config.toml from the working directory, as `streamlit run app.py` does
    out = subprocess.run([sys.executable, "-c", READ], cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_production_settings_are_in_effect():
    options = effective_config()
    assert options["server.address"] == "127.0.0.1"  # a network reaches it through classroom.serve or deploy/
    assert options["server.enableXsrfProtection"] is True
    assert options["server.runOnSave"] is False
    assert options["server.fileWatcherType"] == "none"
    assert options["server.enableAgentApi"] is False  # never in the shipped configuration
    assert options["server.maxMessageSize"] == 16  # MB: a Playground result is at most 4 MiB (default 200)
    assert options["server.maxWidgetStateSize"] == 1  # MB a client sends: widget values (default 25)
    assert options["client.showErrorDetails"] == "none"  # no tracebacks for visitors
    assert options["browser.gatherUsageStats"] is False
    assert 0 < options["server.disconnectedSessionTTL"] <= 120
    # off: a rerun that another stops at once lost what it was drawing (a class's end, under CI's load), though a press
    # of the replay stage reruns nothing now (tests/browser/test_stage_press_cost.py)
    assert options["runner.fastReruns"] is False
