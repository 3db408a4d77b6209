"""The contributor docs (docs/) and the code that cites them, without bpy.

Comments and docstrings cite `docs/<page>.md §N`, never a document outside the repository (the shared design
notes, reference notes or the user's seed documents); a test that reads files of ../shared/testdata is fine,
since reading test data is not citing a document. Every page cited exists and every section cited is a heading
of that page, so a renumbered section or a renamed page fails here rather than leaving dangling citations.
"""
from __future__ import annotations

import ast
import io
import pathlib
import re
import tokenize


def _repo_root() -> pathlib.Path:
    here = pathlib.Path(__file__).resolve().parent
    for folder in (here, *here.parents):
        if (folder / "blender_manifest.toml").is_file() and (folder / "formats.py").is_file():
            return folder
    raise AssertionError(f"no repository root above {here}")


ROOT = _repo_root()
DOCS = ROOT / "docs"

# citations of documents that live outside the repository: any path above the checkout (the sample files of
# ../shared/testdata excepted: reading test data is not citing a document), any other folder of shared/, an absolute
# path of a machine (a relative example such as `../../x.png` is no citation), and the design, reference and seed
# notes by name
FORBIDDEN = re.compile(r"\.\./(?!shared/testdata\b)(?!\.\.)[\w.-]+(?=/)|(?<![\w./-])shared/(?!testdata\b)[\w.-]+"
                       r"|(?<![\w.])/(?:work|home|root|tmp|Users)/[\w.-]+|DESIGN\.md|\bDESIGN\b"
                       r"|reference/(?:pmx|urho|we_mdb_smd|blender_addon)\.md|\b[Ss]eed 00\d")
# a file of ours named in a comment: `io_pmx/model/pmx.py`, `kept.py`, `docs/testing.md`
FILE_NAME = re.compile(r"(?<![\w./-])((?:[\w.-]+/)*[\w-]+\.py)\b")
# a docs page's path followed by its section numbers: "§2", "§2.3", "§3–§4", "§3.1–§3.5 and §4", "§2, §5"
CITATION = re.compile(r"docs/([\w-]+)\.md`?((?:\s*(?:,|and|–|-)?\s*§\d+(?:\.\d+)*)*)")
HEADING = re.compile(r"^#+\s+(\d+(?:\.\d+)*)\.?\s")


def python_files(root: pathlib.Path) -> list[pathlib.Path]:
    out = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).parts
        if any(p.startswith(".venv") or p in ("node_modules", ".git") for p in parts):
            continue
        out.append(path)
    return out


def comment_texts(source: str) -> list[tuple[int, str]]:
    """(line, text) of every comment and every module, class and function docstring of `source`."""
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            out.append((tok.start[0], tok.string))
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                out.append((first.lineno, first.value.value))
    return sorted(out)


def outside_citations(path: pathlib.Path) -> list[str]:
    """`path:line: text` of each comment or docstring that cites a document outside the repository."""
    found = []
    for line, text in comment_texts(path.read_text(encoding="utf-8")):
        if match := FORBIDDEN.search(text):
            found.append(f"{path.name}:{line}: {match.group(0)!r} in {text.strip()[:80]!r}")
    return found


def repository_files(root: pathlib.Path) -> list[str]:
    """Every file of the checkout, as a path relative to it (no venvs, git or npm packages)."""
    skip = (".git", "node_modules", "__pycache__")
    return [p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and not any(
        part.startswith(".venv") or part in skip for part in p.relative_to(root).parts)]


def stale_file_names(path: pathlib.Path, files: list[str]) -> list[str]:
    """`path:line: name` of each Python file a comment or docstring names that the checkout does not hold (a name
    alone matches a file of that name anywhere; a name with folders matches the end of a path)."""
    names = {f.rsplit("/", 1)[-1] for f in files}
    found = []
    for line, text in comment_texts(path.read_text(encoding="utf-8")):
        for m in FILE_NAME.finditer(text):
            name = m.group(1)
            held = any(f == name or f.endswith("/" + name) for f in files) if "/" in name else name in names
            if not held:
                found.append(f"{path.name}:{line}: {name}")
    return found


def docs_citations(text: str) -> list[tuple[str, list[str]]]:
    """(page, [section numbers]) of every `docs/<page>.md §N` citation in `text`."""
    return [(m.group(1), re.findall(r"§(\d+(?:\.\d+)*)", m.group(2))) for m in CITATION.finditer(text)]


def headings(page: pathlib.Path) -> set[str]:
    """The section numbers of a docs page: `## 2. Title` gives "2", `### 2.3 Title` gives "2.3"."""
    out = set()
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (m := HEADING.match(line)):
            out.add(m.group(1))
    return out


def dangling_citations(path: pathlib.Path, docs: pathlib.Path) -> list[str]:
    """Citations in `path`'s comments and docstrings of a docs page that does not exist or a section it lacks."""
    found = []
    for line, text in comment_texts(path.read_text(encoding="utf-8")):
        for page, sections in docs_citations(text):
            target = docs / f"{page}.md"
            if not target.is_file():
                found.append(f"{path.name}:{line}: docs/{page}.md does not exist")
                continue
            missing = [s for s in sections if s not in headings(target)]
            if missing:
                found.append(f"{path.name}:{line}: docs/{page}.md has no section {', '.join(missing)}")
    return found


# -- the repository --------------------------------------------------------------------------------------------

def test_no_comment_or_docstring_cites_a_document_outside_the_repository():
    found = [hit for path in python_files(ROOT) for hit in outside_citations(path)]
    assert not found, "\n".join(found)


def test_every_file_a_comment_names_exists():
    files = repository_files(ROOT)
    found = [hit for path in python_files(ROOT) for hit in stale_file_names(path, files)]
    assert not found, "comments name files that are gone:\n" + "\n".join(found)


def test_the_checks_see_a_planted_outside_path_and_a_stale_file_name(tmp_path):
    module = tmp_path / "planted.py"
    module.write_text('"""Layout from ../interop/notes.txt and /work/shared/x; see kept.py and io_x/gone.py."""\n'
                      "# rows as ../shared/testdata/README.md lists them (test data: fine)\n", encoding="utf-8")
    outside = outside_citations(module)
    assert [h.split("'")[1] for h in outside] == ["../interop"], outside
    module.write_text('"""Layout from shared/interop/bst_written and /work/shared/x."""\n', encoding="utf-8")
    assert [h.split("'")[1] for h in outside_citations(module)] == ["shared/interop"]
    module.write_text('"""Layout from /root/notes/x.txt."""\n', encoding="utf-8")
    assert [h.split("'")[1] for h in outside_citations(module)] == ["/root/notes"]
    module.write_text('"""See kept.py, io_smd/kept.py and io_x/gone.py; SMD (`.smd`) files."""\n', encoding="utf-8")
    files = ["io_smd/kept.py", "core/model.py"]
    assert stale_file_names(module, files) == ["planted.py:1: io_x/gone.py"]
    assert stale_file_names(module, files[1:]) == ["planted.py:1: kept.py", "planted.py:1: io_smd/kept.py",
                                                   "planted.py:1: io_x/gone.py"]


def test_every_docs_page_and_section_cited_in_code_exists():
    files = python_files(ROOT)
    cited = [c for path in files for _, text in comment_texts(path.read_text(encoding="utf-8"))
             for c in docs_citations(text)]
    assert len(cited) >= 50, f"only {len(cited)} citations of docs/ found: the scan no longer sees them"
    found = [hit for path in files for hit in dangling_citations(path, DOCS)]
    assert not found, "\n".join(found)


def test_docs_pages_cite_each_other_by_existing_sections():
    found = []
    for page in sorted(DOCS.glob("*.md")):
        for target, sections in docs_citations(page.read_text(encoding="utf-8")):
            path = DOCS / f"{target}.md"
            if not path.is_file():
                found.append(f"{page.name}: docs/{target}.md does not exist")
            elif missing := [s for s in sections if s not in headings(path)]:
                found.append(f"{page.name}: docs/{target}.md has no section {', '.join(missing)}")
    assert not found, "\n".join(found)


def test_the_pages_exist_with_numbered_sections():
    for name in ("architecture", "urho", "mmd", "wallpaper_engine", "nwn2", "source", "gltf", "blender"):
        numbers = headings(DOCS / f"{name}.md")
        assert {"1", "2"} <= numbers, (name, sorted(numbers))


def test_architecture_names_the_toy_format_test_as_the_proof():
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    registry_tests = sorted((ROOT / "tests").rglob("test_registry.py"))
    assert registry_tests, "tests/…/test_registry.py (the toy format) is gone"
    for path in registry_tests:
        assert path.relative_to(ROOT).as_posix() in text
    assert "the toy format test is the proof" in " ".join(text.lower().split())


# -- the scan itself fails on planted citations ------------------------------------------------------------------

PLANTED = '''"""Codec of the thing (layout: ../shared/reference/pmx.md §1)."""
import os  # per DESIGN.md "Bad input"


def f():
    """Reads ../shared/testdata/pmx/a.pmx: test data, not a citation."""
    return os.sep  # see docs/mmd.md §2.3 and docs/mmd.md §99, docs/nowhere.md §1
'''


def test_the_scan_finds_planted_citations(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text(PLANTED, encoding="utf-8")
    outside = outside_citations(planted)
    assert len(outside) == 2, outside
    assert "../shared/" in outside[0] and "DESIGN.md" in outside[1]
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "mmd.md").write_text("# MMD\n\n## 2. PMX\n\n### 2.3 Vertex\n\n```\n## 99. in a fence\n```\n",
                                 encoding="utf-8")
    dangling = dangling_citations(planted, docs)
    assert len(dangling) == 2, dangling
    assert "no section 99" in dangling[0] and "docs/nowhere.md does not exist" in dangling[1]


def test_the_scan_passes_a_clean_file(tmp_path):
    clean = tmp_path / "clean.py"
    clean.write_text('"""Layout: docs/mmd.md §2.3."""\nDATA = "../shared/reference/x.md"  # a string, not a comment\n',
                     encoding="utf-8")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "mmd.md").write_text("## 2. PMX\n### 2.3 Vertex\n", encoding="utf-8")
    assert outside_citations(clean) == [] and dangling_citations(clean, docs) == []


def test_citation_ranges_and_lists_are_all_checked():
    assert docs_citations("see docs/urho.md §3.1–§3.5 and §4, and docs/mmd.md §2") == \
        [("urho", ["3.1", "3.5", "4"]), ("mmd", ["2"])]


# -- README: lists of targets are the registry's ----------------------------------------------------------------

TARGET_LIST = re.compile(r"--to ((?:[a-z0-9]+\|)+[a-z0-9]+)")


def stale_target_lists(text: str, targets: list[str]) -> list[str]:
    """Each `--to a|b|c` of a text whose names are not the registry's targets, each once (the order is the
    text's: it may put the usual ones first)."""
    out = []
    for m in TARGET_LIST.finditer(text):
        names = m.group(1).split("|")
        if sorted(names) != sorted(targets):
            out.append(m.group(0))
    return out


def test_readme_lists_every_target_where_it_lists_them():
    from skinbridge import formats

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert TARGET_LIST.search(text), "README.md lists no targets"
    assert stale_target_lists(text, list(formats.targets())) == []


def test_a_planted_short_target_list_is_seen():
    from skinbridge import formats

    targets = list(formats.targets())
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    listed = TARGET_LIST.search(text).group(0)
    planted = text.replace(listed, listed.rsplit("|", 1)[0], 1)
    assert stale_target_lists(planted, targets) == [listed.rsplit("|", 1)[0]]
    assert stale_target_lists(text.replace(listed, listed + "|toy", 1), targets) == [listed + "|toy"]
