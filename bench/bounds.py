"""What a flooded lesson input costs the server (issue 20, finding 4), measured side by side in one run.

23 MB of `1,` sent to "New gradient values" on Gradient consumption through the agent API, as a script sends it
past the browser's max_chars, then 0.9 MB (just under the 1 MB a client may send): the server's RSS before, at its
peak and once settled, and the slowest `/_stcore/health` while the request was in the server (goal: 200 ms).
The same floods against Streamlit's default message limit (25 MB) show what the shipped 1 MB saves.

Run: python bench/bounds.py   (about a minute; starts two servers with the agent API on, one after the other)
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.browser.flood import flood_gradient_values  # noqa: E402
from tests.browser.harness import streamlit_server  # noqa: E402

HEALTH_GOAL_S = 0.2
FLOODS = {"23 MB": "1," * 11_500_000, "0.9 MB": "1," * 450_000}
LIMITS = {"shipped (1 MB)": (), "Streamlit's default (25 MB)": ("--server.maxWidgetStateSize", "25")}


def main() -> None:
    print(f"{'client limit':28} {'sent':>7} {'status':>6} {'answer s':>8} {'RSS before':>10} {'peak':>6} "
          f"{'settled':>7} {'kept':>6} {'health during':>13} {'x goal':>6}")  # fmt: skip
    for limit, args in LIMITS.items():
        with (
            tempfile.TemporaryDirectory() as folder,
            streamlit_server(
                Path(folder) / "server.log", ("--server.enableAgentApi", "true", *args), with_pid=True
            ) as (url, pid),
        ):
            for name, payload in FLOODS.items():
                f = flood_gradient_values(url, pid, payload)
                print(f"{limit:28} {name:>7} {f.status:>6} {f.seconds:8.2f} {f.rss_before_mib:8.0f} MiB "
                      f"{f.rss_peak_mib:6.0f} {f.rss_after_mib:7.0f} {f.rss_after_mib - f.rss_before_mib:+6.0f} "
                      f"{f.health_during_s * 1000:10.0f} ms {f.health_during_s / HEALTH_GOAL_S:6.2f}")  # fmt: skip
    print("status 0: the server closed the connection before reading the whole body; 'kept' is RSS settled - before")


if __name__ == "__main__":
    main()
