"""Stand-in for a lesson's address on a freshly started server; it runs the app's frame, which runs the lesson.

Until some session has run `st.navigation`, Streamlit serves `pages/*.py` as legacy pages, so the very first
request of a deep link lands on the file whose stem matches its address: this one. See ui/navigation.py.
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[1] / "frame.py"), run_name="__main__")
