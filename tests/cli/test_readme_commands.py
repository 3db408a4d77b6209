"""Every shell command the README shows works verbatim after its two first commands (issue 28, first contact).

Each fenced block without a language (```` ``` ````, ```` ```sh ````, ```` ```bash ````) is a shell block; an HTML
comment `<!-- readme-test: skip (why) -->` right before a block, or right after it, leaves it out, and
`<!-- readme-test: except "PREFIX" (why) -->` leaves out its lines that start with PREFIX. The blocks run in a
folder of their own holding the sample `Fox.glb` (the README's example input), with `tools/run` of a stand-in
repository whose venv reuses this test run's environment (nothing is downloaded), called from that folder."""
from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, TESTDATA

pytestmark = pytest.mark.blender

FENCE = re.compile(r"^```(\w*)\s*$")
MARK = re.compile(r"^<!-- readme-test: (skip|except \"([^\"]+)\")(?: .*)?-->\s*$")


def readme_blocks(text: str) -> list[tuple[int, list[str]]]:
    """(line number, command lines) of every shell block the README's marks leave in."""
    lines = text.splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        marks = [lines[i - 1]] if i > 0 else []
        after = next((lines[j] for j in range(end + 1, len(lines)) if lines[j].strip()), "")
        marks.append(after)
        if m.group(1) in ("", "sh", "bash"):
            body = [ln for ln in lines[i + 1:end] if ln.strip()]
            found = [MARK.match(x) for x in marks]
            if not any(f and f.group(1) == "skip" for f in found):
                prefixes = [f.group(2) for f in found if f and f.group(2)]
                blocks.append((i + 1, [ln for ln in body if not any(ln.startswith(p) for p in prefixes)]))
        i = end + 1
    return blocks


def test_readme_marks_are_read():
    blocks = readme_blocks((ROOT / "README.md").read_text(encoding="utf-8"))
    commands = [c for _, b in blocks for c in b]
    assert "bash tools/run demo" in commands and "bash tools/run test" not in commands
    assert not any(c.startswith("mkdir -p dist") for c in commands)  # marked: needs a Blender binary
    assert any(" convert Fox.glb " in c for c in commands)


# tools/run's environments: venv folder → (Blender version, requirements file)
ENVIRONMENTS = {".venv-4.5": ("4.5", "tools/requirements-4.5.txt"), ".venv": ("5.0", "tools/requirements.txt"),
                ".venv-5.2": ("5.2", "tools/requirements-5.2.txt")}


def _stand_in(tmp: pathlib.Path, venv_name: str, requirements: str) -> pathlib.Path:
    """A repository of links to this one, with a venv of this run's name whose packages are this run's (a .pth
    file) and whose set-up stamp matches, so tools/run sets nothing up; its `skinbridge` link and command go there."""
    repo = tmp / "repo"
    repo.mkdir()
    for entry in ROOT.iterdir():
        if not entry.name.startswith((".venv", ".git")):
            (repo / entry.name).symlink_to(entry)
    venv = repo / venv_name
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", "--without-pip", str(venv)],
                   check=True)
    site = next(venv.glob("lib/python*/site-packages"))
    here = [p for p in sys.path if p.endswith("site-packages") and os.path.isdir(os.path.join(p, "bpy"))]
    (site / "reuse.pth").write_text("\n".join(here) + "\n")
    stamp = subprocess.run(["bash", "-c", f"(cat {requirements} tools/package.json 2>/dev/null || true)"
                            " | sha256sum | cut -c1-16"], cwd=repo, capture_output=True, text=True, check=True)
    (venv / ".skinbridge-setup").write_text(stamp.stdout)
    return repo


def test_every_readme_command_works_verbatim(tmp_path):
    venv_name = pathlib.Path(sys.prefix).name
    if venv_name not in ENVIRONMENTS:
        pytest.fail(f"run this test from one of tools/run's environments ({', '.join(ENVIRONMENTS)}), not {sys.prefix}")
    version, requirements = ENVIRONMENTS[venv_name]
    repo = _stand_in(tmp_path, venv_name, requirements)
    work = tmp_path / "work"
    work.mkdir()
    shutil.copyfile(TESTDATA / "gltf" / "Fox.glb", work / "Fox.glb")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BLENDER_USER_", "SKINBRIDGE_USER"))}
    env["SKINBRIDGE_BLENDER"] = version  # the README's commands on this run's Blender
    ran = []
    for line_no, commands in readme_blocks((ROOT / "README.md").read_text(encoding="utf-8")):
        for command in commands:
            run = command.replace("bash tools/run", f"bash {repo}/tools/run")
            r = subprocess.run(["bash", "-c", run], cwd=work, env=env, capture_output=True, text=True, timeout=300)
            assert r.returncode == 0, f"README line {line_no}: {command}\n{r.stderr[-2000:]}"
            assert "Traceback" not in r.stderr, command
            ran.append(command)
    print("ran:\n  " + "\n  ".join(ran))
    assert len(ran) >= 6
    assert (work / "Fox_UrhoX" / "Fox.mdl").is_file() and (work / "Fox.png").is_file()
    assert (work / "skinbridge-demo").is_dir()
    assert not (repo / "Fox_UrhoX").exists() and not (ROOT / "Fox_UrhoX").exists()
