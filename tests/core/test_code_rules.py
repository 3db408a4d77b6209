"""House rules every module of the add-on keeps (docs/architecture.md, README "Layout"): no `import` inside a
function unless a comment on its line says why (bpy must not load at import time, the environment is set before
bpy, or a measured import cost), and no function longer than 100 lines. No bpy needed."""
from __future__ import annotations

import ast
import pathlib
import re

from support import house

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOT_ADDON = {"tests", "bench", "tools", ".git", ".ci", "dist", "node_modules"}
MAX_FUNCTION_LINES = 100


def _modules(root: pathlib.Path) -> list[pathlib.Path]:
    out = []
    for py in sorted(root.rglob("*.py")):
        rel = py.relative_to(root)
        if NOT_ADDON & set(rel.parts) or any(part.startswith(".venv") for part in rel.parts):
            continue
        out.append(rel)
    return out


NOQA = re.compile(r"noqa(?::\s*[A-Z]+\d+(?:\s*,\s*[A-Z]+\d+)*)?", re.I)


def reason(line: str) -> str:
    """The words of the line's comment once a linter's `noqa` code is taken out ("" when it gives no reason)."""
    if "#" not in line:
        return ""
    text = NOQA.sub("", line.split("#", 1)[1])
    return text.strip(" ()-:;,.") if re.search(r"[^\W\d_]", text) else ""


def violations(root: pathlib.Path = ROOT) -> list[str]:
    """file:line and the rule broken, for every module of the add-on below `root`."""
    bad = []
    for rel in _modules(root):
        source = (root / rel).read_text(encoding="utf-8")
        lines = source.splitlines()
        for fn in ast.walk(ast.parse(source, str(rel))):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            length = fn.end_lineno - fn.lineno + 1
            if length > MAX_FUNCTION_LINES:
                bad.append(f"{rel}:{fn.lineno}: function {fn.name} is {length} lines (at most {MAX_FUNCTION_LINES})")
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)) and not reason(lines[node.lineno - 1]):
                    bad.append(f"{rel}:{node.lineno}: import inside {fn.name} without a comment giving the reason")
    return sorted(set(bad))


def test_addon_keeps_the_code_rules():
    bad = violations()
    assert not bad, "\n".join(bad)


def test_checker_reports_each_planted_violation(tmp_path):
    long_body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))  # with the def: 101 lines
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "planted.py").write_text(
        "import os\n\n\n"
        "def lazy():\n    import json\n    return json, os\n\n\n"
        "def explained():\n    import json  # a reason\n    return json\n\n\n"
        "def silenced():\n    import json  # noqa: F401\n    return json\n\n\n"
        "def silenced_with_reason():\n    import json  # noqa: E402  (bpy after the environment)\n    return json\n\n\n"
        f"def long():\n{long_body}\n\n"
        f"def just_fits():\n{long_body[:long_body.rindex('    x')]}", encoding="utf-8")
    (tmp_path / "tests").mkdir()  # outside the add-on: never checked
    (tmp_path / "tests" / "test_x.py").write_text("def t():\n    import json\n", encoding="utf-8")
    assert violations(tmp_path) == [
        "core/planted.py:15: import inside silenced without a comment giving the reason",
        "core/planted.py:24: function long is 101 lines (at most 100)",
        "core/planted.py:5: import inside lazy without a comment giving the reason",
    ]


# -- names that belong to one module, keys that belong to one format (tests/support/house.py) --------------------

def test_no_module_uses_another_modules_private_name():
    bad = house.private_name_uses()
    assert not bad, "\n".join(bad)


def test_a_planted_private_name_is_seen(tmp_path):
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "a.py").write_text("_hidden = 1\n\n\ndef _helper():\n    return 2\n")
    (tmp_path / "core" / "b.py").write_text("import os\n\nfrom . import a\nfrom .a import _hidden\n\n"
                                            "x = a._helper() + _hidden\ny = os._exit\n")
    assert house.private_name_uses(tmp_path) == ["core/b.py:4: from .a import _hidden", "core/b.py:6: a._helper"]


def test_no_shared_layer_names_a_formats_extras_keys():
    assert len(house.extras_keys()) > 20, "the scan no longer sees the extras keys"
    bad = house.foreign_extras()
    assert not bad, "extras keys of one format named outside its package:\n" + "\n".join(bad)


def test_a_planted_format_key_in_a_shared_layer_is_seen(tmp_path):
    (tmp_path / "io_toy").mkdir()
    (tmp_path / "io_toy" / "convert.py").write_text('def load(scene):\n    scene.extras["toy"] = {"a": 1}\n')
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "fix.py").write_text('def fix(b):\n    return (b.extras or {}).get("toy")\n')
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "model.py").write_text('CLIP_KEY = "clip"\n\n\ndef f(s):\n    return s.extras.get("clip")\n')
    (tmp_path / "io_toy" / "clips.py").write_text('def g(s):\n    return s.extras["clip"]\n')
    assert house.foreign_extras(tmp_path) == ["toy: io_toy and app"]
