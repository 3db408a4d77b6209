"""The suite's own layout (docs/testing.md §3): no module of tests/ imports a test module (`test_*`), and no module
of tests/ is imported by its bare name: shared helpers live in tests/support/ and are imported through `support`
(`conftest` too, which pytest puts on the path with tests/). No test folder but tests/ itself is put on the path
for them, so an import by bare name works only by the accident of collection order. No bpy needed."""
from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
THROUGH = {"support", "conftest"}  # the names a module of tests/ is imported by
IMPORTERS = {"import_module", "__import__"}  # importlib.import_module("x"), __import__("x")


def bare_names(tests: pathlib.Path) -> set[str]:
    """Every name by which a module of tests/ could be imported if its folder were on the path."""
    names = {p.stem for p in tests.rglob("*.py")} | {p.parent.name for p in tests.rglob("__init__.py")}
    return names - THROUGH - {"__init__"}


def imported(node: ast.AST) -> list[str]:
    """The absolute module names an import statement, or a call of importlib.import_module / __import__ with a
    constant name, imports (relative imports inside a support package are the package's own business)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        return [node.module] if node.level == 0 and node.module else []
    if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in IMPORTERS and isinstance(node.args[0].value, str):
            return [node.args[0].value]
    return []


def violations(tests: pathlib.Path = ROOT / "tests") -> list[str]:
    """file:line and the import, for every module of `tests` that imports a test module or another module of
    `tests` other than through `support` / `conftest`."""
    known = bare_names(tests)
    bad = []
    for path in sorted(tests.rglob("*.py")):
        rel = path.relative_to(tests.parent).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), rel)):
            for name in imported(node):
                top = name.split(".")[0]
                if top.startswith("test_"):
                    bad.append(f"{rel}:{node.lineno}: imports the test module {name}: what it shares belongs in "
                               "tests/support/")
                elif top in known:
                    bad.append(f"{rel}:{node.lineno}: imports {name}, a module of tests/, by its bare name: move "
                               "it to tests/support/ and import it through `support`")
    return sorted(bad, key=lambda line: (line.split(":")[0], int(line.split(":")[1])))


def test_no_test_module_imports_another_or_a_helper_by_bare_name():
    bad = violations()
    assert not bad, "\n".join(bad)


def test_the_rule_reports_each_planted_import(tmp_path):
    tests = tmp_path / "tests"
    for folder in ("support/hostile", "mmd"):
        (tests / folder).mkdir(parents=True)
    files = {
        "conftest.py": "import pathlib\n",
        "support/__init__.py": "",
        "support/babylon.py": "from support import tools\nfrom support.tools import node\n",
        "support/tools.py": "node = 'node'\n",
        "support/hostile/__init__.py": "",
        "support/hostile/hostile_cases.py": "from . import hostile_pmx\nfrom .hostile_pmx import cases\n",
        "support/hostile/hostile_pmx.py": "cases = []\n",
        "mmd/pmx_helpers.py": "LUKA = 'luka'\n",
        "mmd/test_pmx_codec.py": (
            "import json\n"
            "from conftest import run_cli\n"
            "from support.babylon import node\n"
            "from support.hostile import hostile_pmx\n"
            "from skinbridge.io_pmx.model import pmx\n"
            "from test_pmx_babylon import babylon_parse\n"
            "import pmx_helpers\n"
            "import tools\n"
            "import hostile_cases\n"),
        "mmd/test_pmx_babylon.py": (
            "import importlib\n\n\n"
            "def babylon_parse():\n"
            "    from test_pmx_codec import SAMPLES\n"
            "    return importlib.import_module('test_pmx_codec'), __import__('support.tools'), SAMPLES\n"),
    }
    for rel, text in files.items():
        (tests / rel).write_text(text, encoding="utf-8")
    test_module = ": what it shares belongs in tests/support/"
    bare = ", a module of tests/, by its bare name: move it to tests/support/ and import it through `support`"
    assert violations(tests) == [
        f"tests/mmd/test_pmx_babylon.py:5: imports the test module test_pmx_codec{test_module}",
        f"tests/mmd/test_pmx_babylon.py:6: imports the test module test_pmx_codec{test_module}",
        f"tests/mmd/test_pmx_codec.py:6: imports the test module test_pmx_babylon{test_module}",
        f"tests/mmd/test_pmx_codec.py:7: imports pmx_helpers{bare}",
        f"tests/mmd/test_pmx_codec.py:8: imports tools{bare}",
        f"tests/mmd/test_pmx_codec.py:9: imports hostile_cases{bare}",
    ]
