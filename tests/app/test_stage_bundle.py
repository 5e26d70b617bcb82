"""The stage's ES modules (autodiff/stage/js/) and the build that makes each host's one module (bundle.py): every
host's bundle parses as an ES module and keeps only its entry's default export; the build refuses, in words, an import
it cannot follow; every JavaScript module of the app's own is at most 600 lines; the model modules touch no DOM; and
the stage on the wire is no larger than the single file it was made from."""

from __future__ import annotations

import ast
import gzip
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from autodiff.stage import STAGE_JS
from autodiff.stage.bundle import HOSTS, JS, BundleError, bundle, bundled, module_order

ROOT = Path(__file__).resolve().parents[2]
NODE = shutil.which("node")
# stage.js, the one file the modules were cut from (commit 9ccdae8): raw bytes, and gzip at level 6 (the server's)
SINGLE_FILE_BYTES, SINGLE_FILE_GZIP = 121_932, 37_241
MAX_LINES = 600


def app_modules() -> list[Path]:
    """Every JavaScript file of the app's own (not the pinned vendor files)."""
    return sorted([*JS.rglob("*.mjs"), *(ROOT / "ui").glob("*.js")])


def test_every_module_of_the_apps_own_is_at_most_600_lines():
    modules = app_modules()
    assert len([m for m in modules if m.is_relative_to(JS)]) >= 15  # the stage, split: not one file renamed
    long = {str(m.relative_to(ROOT)): n for m in modules if (n := len(m.read_text().splitlines())) > MAX_LINES}
    assert not long, f"over {MAX_LINES} lines: {long}"


@pytest.mark.skipif(NODE is None, reason="needs node (Debian's nodejs)")
@pytest.mark.parametrize("host", sorted(HOSTS))
def test_each_hosts_bundle_is_one_es_module_that_parses(host, tmp_path):
    source = bundle(host)
    assert not re.search(r"^import\b", source, re.M), "an import line was left in the bundle"
    defaults = re.findall(r"^export default\b", source, re.M)
    assert len(defaults) == (0 if host == "page" else 1)  # Streamlit and anywidget mount through it
    assert not re.search(r"^export (?!default)", source, re.M)  # the modules' own exports are one scope now
    path = tmp_path / f"{host}.mjs"
    path.write_text(source)
    checked = subprocess.run([NODE, "--check", str(path)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    # each module of the entry is in it, once, in an order where a module comes after the ones it imports
    order = module_order(JS / HOSTS[host])
    assert order[-1] == (JS / HOSTS[host]).resolve() and len(order) == len(set(order)) >= 15
    for k, module in enumerate(order):
        for target in re.findall(r'^import \{[^}]*\} from "([^"]+)";', module.read_text(), re.M):
            assert (module.parent / target).resolve() in order[:k], f"{module.name} comes before {target}"
    assert source.count("function mountStage(") == 1


def test_the_streamlit_bundle_is_the_stage_the_app_mounts():
    assert bundle("streamlit") == STAGE_JS
    assert "export default function (component)" in STAGE_JS


def test_the_stage_on_the_wire_is_no_larger_than_the_single_file_was():
    for host in ("streamlit", "page"):
        source = bundle(host).encode()
        assert len(source) <= SINGLE_FILE_BYTES, (host, len(source))
        assert len(gzip.compress(source, 6)) <= SINGLE_FILE_GZIP, (host, len(gzip.compress(source, 6)))


def test_the_model_modules_touch_no_dom_and_import_only_the_model():
    model = sorted((JS / "model").glob("*.mjs"))
    assert {m.stem for m in model} >= {"contract", "steps", "parts", "dot", "answers"}
    for module in model:
        source = module.read_text()
        assert not re.search(r"\b(document|window|getComputedStyle|requestAnimationFrame)\b", source), module.name
        for target in re.findall(r'^import \{[^}]*\} from "([^"]+)";', source, re.M):
            assert (module.parent / target).resolve().parent == module.parent, f"{module.name} imports {target}"


def test_features_step_through_the_controllers_callback_and_never_import_it():
    for module in [*(JS / "features").glob("*.mjs"), *(JS / "view").glob("*.mjs"), *(JS / "model").glob("*.mjs")]:
        source = module.read_text()
        assert "controller.mjs" not in source, f"{module.name} imports the controller"
        assert not re.search(r"(?<![.\w])show\(", source), f"{module.name} calls show() itself"


def write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder / "entry.mjs"


@pytest.mark.parametrize(
    ("files", "said"),
    [
        (
            {
                "entry.mjs": 'import { a } from "./a.mjs";\na();\n',
                "a.mjs": 'import { b } from "./b.mjs";\nexport function a() { b(); }\n',
                "b.mjs": 'import { a } from "./a.mjs";\nexport function b() { a(); }\n',
            },
            "a circular import: a.mjs -> b.mjs -> a.mjs",
        ),
        ({"entry.mjs": 'import { a } from "./gone.mjs";\na();\n'}, "entry.mjs imports gone.mjs, which does not exist"),
        (
            {
                "entry.mjs": 'import { a, c } from "./a.mjs";\na();\n',
                "a.mjs": "export function a() {}\nfunction c() {}\n",
            },
            "entry.mjs imports c from a.mjs, which does not export it",
        ),
        (
            {
                "entry.mjs": 'import { a } from "./a.mjs";\nfunction a2() {}\nconst x = 1;\n',
                "a.mjs": "export function a() {}\nconst x = 2;\n",
            },
            "x is declared in a.mjs and in entry.mjs",
        ),
        ({"entry.mjs": 'import { a as b } from "./a.mjs";\n', "a.mjs": "export function a() {}\n"}, "imports a as b"),
        ({"entry.mjs": 'import * as a from "./a.mjs";\n', "a.mjs": "export function a() {}\n"}, "is not an import"),
        (
            {"entry.mjs": 'import { a } from "./a.mjs";\n', "a.mjs": "export function a() {}\nexport default 1;\n"},
            "a.mjs has a default export: only a host's entry has one",
        ),
    ],
    ids=["circle", "missing module", "missing name", "declared twice", "renamed", "namespace", "default export"],
)
def test_the_build_refuses_what_it_cannot_bundle_in_words(tmp_path, files, said):
    with pytest.raises(BundleError, match=re.escape(said)):
        bundled(write(tmp_path, files))


def test_the_build_puts_each_module_after_the_ones_it_imports(tmp_path):
    entry = write(
        tmp_path,
        {
            "entry.mjs": (
                '// the entry\n\nimport { b } from "./b.mjs";\nimport { a } from "./a.mjs";\nexport default b(a);\n'
            ),
            "a.mjs": "// a's header, dropped\nexport const a = 1;\n",
            "b.mjs": 'import { a } from "./a.mjs";\nexport function b(x) { return x + a; }\n',
        },
    )
    assert bundled(entry) == "const a = 1;\n\nfunction b(x) { return x + a; }\n\nexport default b(a);\n"


def test_no_javascript_lives_in_a_python_string_of_the_app():
    # the app's JavaScript is in files of its own (the stage's modules, ui/*.js), read or bundled from there; the
    # tests' and benchmarks' Playwright probes are not the app's
    # a string is code when it has two of these (one alone is a docstring naming a piece of JavaScript)
    marks = [
        r"\bexport default\b",
        r"=>\s*[{(]",
        r"\bdocument\.\w",
        r"addEventListener\(",
        r"\b(const|let) \w+ = ",
        r"\bfunction \w*\([^)]*\)\s*\{",
    ]
    sources = [ROOT / "app.py", ROOT / "frame.py"]
    for folder in ("autodiff", "ui", "pages", "lessons", "classroom", "course", "playground"):
        sources += sorted((ROOT / folder).rglob("*.py"))
    found = []
    for path in sources:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            text = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""
            if sum(1 for mark in marks if re.search(mark, text)) >= 2:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert len(sources) > 50 and not found, found


def test_the_bundle_drops_comment_lines_blocks_and_indentation_but_never_a_templates_text(tmp_path):
    template = (
        "const dot = `digraph {\n// a line of the template, not a comment\n/* nor this\n*/\n"
        "  ${`nested ${{ a: 1 }.a}`}\n    indented text\n}`;\n"
    )
    entry = write(
        tmp_path,
        {
            "entry.mjs": (
                "// what this module is for\n/** @typedef {number} One */\n/**\n * @typedef {string} Two\n */\n"
                "export default 1;\n"
                '  // a comment inside code\nif (1) {\n    const s = "// a string";\n}\n' + template
            )
        },
    )
    assert bundled(entry) == 'export default 1;\nif (1) {\nconst s = "// a string";\n}\n' + template


def test_the_bundle_drops_a_comment_after_code_only_where_it_is_sure_to_be_one(tmp_path):
    kept = [
        "const re = /\\/\\//g;  // a regex: the lexer does not read it, so the line stays whole\n",
        "const half = a / 2;  // a division: the same\n",
        "const t = `text // of a template`;\n",
        "const u = \"http://x\" + '//';\n",
    ]
    entry = write(
        tmp_path,
        {"entry.mjs": 'export default 1;  // the entry\nconst s = "// a string", n = 2;  // two\n' + "".join(kept)},
    )
    assert bundled(entry) == 'export default 1;\nconst s = "// a string", n = 2;\n' + "".join(kept)
