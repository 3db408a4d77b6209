"""SMD / VTA codec: the real files read and write back token by token, the writer's numbers equal Python's
'{:.6f}', the parser's equal float(), and every structural fault is a FormatError naming its line."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

from skinbridge.core.errors import FormatError
from skinbridge.io_smd.smd import check
from skinbridge.io_smd.smd import info
from skinbridge.io_smd.smd import smd

SMD_DIR = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "testdata" / "smd"
FILES = sorted(p.name for p in SMD_DIR.glob("*"))
CUBE = SMD_DIR / "bst_Cube_Armature_ref.smd"


def _tokens(data: bytes) -> list[bytes]:
    return data.split()


def _same_tokens(a: bytes, b: bytes) -> None:
    ta, tb = _tokens(a), _tokens(b)
    assert len(ta) == len(tb)
    for x, y in zip(ta, tb):
        if x != y:
            assert abs(float(x) - float(y)) <= 1e-6, (x, y)


def _vertex_line_shapes(data: bytes) -> list[int]:
    """Token count of every vertex line (9: no links, 10: count 0, more: links)."""
    text = data.decode().replace("\r\n", "\n")
    block = text.split("\ntriangles\n", 1)[1].split("\nend\n", 1)[0].split("\n")
    return [len(line.split()) for i, line in enumerate(block) if i % 4]


def test_every_file_is_in_the_list():
    assert len(FILES) == 7


@pytest.mark.parametrize("name", FILES)
def test_written_back_in_its_own_flavour(name):
    data = (SMD_DIR / name).read_bytes()
    f = smd.read(data)
    assert f.warnings == []
    written = smd.write(f)
    _same_tokens(data, written)
    assert check.token_difference(data, written) is None
    crlf = b"\r\n" in data
    assert (b"\r\n" in written) == crlf
    assert written.count(b"\n") == data.count(b"\n")
    if b"\ntriangles" in data.replace(b"\r", b""):
        assert _vertex_line_shapes(written) == _vertex_line_shapes(data)


def test_flavours_of_the_samples():
    gold = smd.read((SMD_DIR / "bst_Cube_Armature_GoldSource_ref.smd").read_bytes())
    assert gold.newline == "\r\n" and gold.goldsrc and set(gold.triangles.link_counts) == {-1}
    assert set(smd.read((SMD_DIR / "bst_Cube_NoArmature_ref.smd").read_bytes()).triangles.link_counts) == {0}
    over = smd.read((SMD_DIR / "bst_Overlapping_DifferentWeights.smd").read_bytes()).triangles
    assert list(over.link_counts) == [0, 0, 0, 1, 1, 1]
    assert over.link_bones[3:, 0].tolist() == [1, 1, 1] and over.link_weights[3:, 0].tolist() == [1.0] * 3


def test_vta_keeps_its_shape_name_and_is_byte_identical():
    data = (SMD_DIR / "bst_Cube_NoArmature_flex.vta").read_bytes()
    f = smd.read(data)
    assert [(fr.time, fr.comment) for fr in f.skeleton] == [(0, None), (1, "Key 1")]
    assert [len(fr.vertices) for fr in f.vertex_animation] == [36, 18]
    written = smd.write(f)
    assert b"time 1 # Key 1\n" in written
    assert written == data


@pytest.mark.parametrize("name,triangles", [("bst_Cube_Armature_ref.smd", 12),
                                            ("bst_Cube_Armature_GoldSource_ref.smd", 12),
                                            ("bst_Cube_NoArmature_ref.smd", 12),
                                            ("bst_Curve_Armature_BezierCurve_ref.smd", 24),
                                            ("bst_Overlapping_DifferentWeights.smd", 2)])
def test_info_of_references(name, triangles):
    summary = info.info((SMD_DIR / name).read_bytes(), str(SMD_DIR / name))
    assert summary["kind"] == "model"
    assert summary["triangles"] == triangles
    assert summary["animations"] == []


def test_info_of_the_animation():
    path = SMD_DIR / "bst_ActionFilter_X_Axis_anim.smd"
    summary = info.info(path.read_bytes(), str(path))
    assert summary["kind"] == "motion" and summary["frames"] == 3
    assert [a["frames"] for a in summary["animations"]] == [3]
    assert smd.kind_of(path.read_bytes()) == "motion"
    assert smd.kind_of(CUBE.read_bytes()) == "model"
    assert smd.kind_of((SMD_DIR / "bst_Cube_NoArmature_flex.vta").read_bytes()) == "flex"


def test_the_registry_knows_smd_and_vta():
    from skinbridge import formats

    spec = formats.get("smd")
    assert spec.extensions == (".smd", ".vta") and spec.target == "smd" and spec.weak and spec.head == 4096
    for name in FILES:
        assert formats.identify((SMD_DIR / name).read_bytes()[:4096], name) is spec
    assert not spec.sniff(b"PMX \x00\x00\x00\x40")
    assert spec.get("kind_of")((SMD_DIR / "bst_Cube_NoArmature_flex.vta").read_bytes()) == "flex"


# -- numbers ---------------------------------------------------------------------------------------------

def test_writer_numbers_equal_python_format():
    rng = np.random.default_rng(7)
    x = np.concatenate([
        rng.normal(size=2000) * 10.0 ** rng.integers(-8, 9, 2000),
        rng.normal(size=500).astype(np.float32).astype(np.float64),
        np.arange(-2000, 2000) / 2e6,  # exact and near halves of the sixth decimal
        [0.0, -0.0, -1e-9, 5e-7, -5e-7, 2.5e-7, 1.0000005, 0.0000015, 123456789.123456, -9.9999995, 1e12],
    ])
    cells = smd._float_cells(x)
    got = [bytes(row[row != 0]).decode() for row in cells]
    assert got == ["{:.6f}".format(v) for v in x]


def test_integer_cells():
    v = np.array([0, -1, 7, 10, 99, 100, -123456, 2 ** 40])
    assert [bytes(r[r != 0]).decode() for r in smd._int_cells(v)] == [str(i) for i in v]


def test_parser_numbers_equal_float():
    rng = np.random.default_rng(3)
    x = rng.normal(size=3000) * 10.0 ** rng.integers(-9, 9, 3000)
    words = (["%.6f" % v for v in x] + ["%.17g" % v for v in x] + ["%.3e" % v for v in x[:50]]
             + ["0", "-0", "+1", ".5", "-.25", "5.", "1e3", "nan", "-inf", "12345678901234567890", "000.000100"])
    data = " ".join(words).encode()
    buf = np.frombuffer(data, np.uint8)
    ts, te = smd._tokens(buf, 0, len(buf))
    values, bad = smd._parse_tokens(buf, ts, te)
    assert not bad.any()
    expected = np.array([float(w) for w in words])
    assert np.array_equal(values, expected, equal_nan=True)
    assert np.array_equal(np.signbit(values), np.signbit(expected))
    # near misses of the fast path's shape are not numbers
    words = [b"!.123456", b"(.123456", b"1.12345x", b"12-45678", b"1.2.3456", b"--1.000000", b"+-1", b"1e", b"."]
    data = b"                " + b" ".join(words)
    buf = np.frombuffer(data, np.uint8)
    ts, te = smd._tokens(buf, 0, len(buf))
    _, bad = smd._parse_tokens(buf, ts, te)
    assert bad.tolist() == [True] * len(words)


def test_tolerant_reading():
    text = ("// Created by Crowbar\r\nversion 1\r\n  nodes\r\n  0 \"root\" -1\r\nend\r\n\tskeleton\r\n"
            "time 0\r\n    0 0 0 0 0 0 0\r\n// a comment inside a block\r\nend\r\ntriangles\r\nmat\r\n"
            "  0 0 0 0 0 0 1 0 0\r\n  0 1 0 0 0 0 1 1 0\r\n  0 0 1 0 0 0 1 0 1\r\n\r\n")
    f = smd.read(text.encode())
    assert f.newline == "\r\n" and len(f.triangles) == 1 and f.triangles.materials == ["mat"]
    assert f.triangles.positions[1].tolist() == [1.0, 0.0, 0.0]
    assert f.warnings == []  # the blank line closed the triangles block


# -- structural faults -----------------------------------------------------------------------------------

HEAD = "version 1\nnodes\n0 \"root\" -1\nend\nskeleton\ntime 0\n0 0 0 0 0 0 0\nend\n"
V = "0 0 0 0 0 0 1 0 0"


def _tri(*lines: str, material: str = "mat") -> str:
    return HEAD + "triangles\n" + material + "\n" + "\n".join(lines) + "\nend\n"


def _raises(text: str | bytes, line: int, field: str):
    data = text.encode() if isinstance(text, str) else text
    with pytest.raises(FormatError) as e:
        smd.read(data)
    assert f"line {line}:" in str(e.value), str(e.value)
    assert e.value.field == field, (e.value.field, str(e.value))
    return e.value


def test_vertex_line_with_fewer_than_9_fields():
    _raises(_tri(V, "0 0 0 0 0 0 1 0", V), 12, "v")


def test_vertex_line_shorter_than_its_link_count():
    _raises(_tri(V, V + " 2 0 0.5 0", V), 12, "link count")


def test_non_number():
    e = _raises(_tri(V, "0 0 0 0 0 zero 1 0 0", V), 12, "normal y")
    assert "'zero'" in str(e)
    _raises(HEAD.replace("0 0 0 0 0 0 0", "0 0 0 0 x 0 0"), 7, "rotation x")


def test_triangle_with_fewer_than_3_vertex_lines():
    _raises(_tri(V, V), 10, "vertex line")  # the block ends after two vertex lines
    _raises(_tri(V, V, "mat", V, V, V), 13, "vertex line")  # a material line where the third belongs


def test_pieces_of_different_link_widths_and_faults_in_later_pieces(monkeypatch):
    """Vertex lines are parsed a piece at a time (here one triangle per piece): a later piece with more links
    widens the link table, earlier rows keep theirs; a fault in a later piece names its own line."""
    monkeypatch.setattr(smd._pieces, "__defaults__", (3,))
    lines = [V + " 1 0 1", V, V,  # one link; then none (count column absent); then
             V + " 0", V + " 2 0 0.25 0 0.75", V + " 3 0 0.5 0 0.25 0 0.25"]  # count 0, two and three links
    f = smd.read((HEAD + "triangles\nmat\n" + "\n".join(lines[:3]) + "\nmat\n" + "\n".join(lines[3:])
                  + "\nend\n").encode())
    t = f.triangles
    assert t.link_counts.tolist() == [1, -1, -1, 0, 2, 3] and t.link_bones.shape == (6, 3)
    assert t.link_bones.tolist() == [[0, -1, -1], [-1] * 3, [-1] * 3, [-1] * 3, [0, 0, -1], [0, 0, 0]]
    assert t.link_weights.tolist() == [[1, 0, 0], [0] * 3, [0] * 3, [0] * 3, [0.25, 0.75, 0], [0.5, 0.25, 0.25]]
    assert t.lines.tolist() == [11, 12, 13, 15, 16, 17]
    _raises(HEAD + "triangles\nmat\n" + "\n".join([V] * 3) + "\nmat\n" + "\n".join([V, V + " 2 0 1", V]) +
            "\nend\n", 16, "link count")
    # an id beyond 32 bits in a later piece: the ids read before it are kept, it is kept exactly
    big = 2 ** 40 + 3
    f = smd.read((HEAD + "triangles\nmat\n" + "\n".join([V + " 1 0 1"] * 3) + "\nmat\n" +
                  "\n".join([V + " 1 0 1", V + f" 1 {big} 1", V + " 1 -7 1"]) + "\nend\n").encode())
    assert f.triangles.link_bones[:, 0].tolist() == [0, 0, 0, 0, big, -7]
    with pytest.raises(FormatError, match=f"line 16: link bone {big} names no node"):
        smd.write(f)  # kept by the reader, refused by the writer


def test_version_other_than_1():
    _raises(HEAD.replace("version 1", "version 2"), 1, "version")


def test_line_over_64_kib():
    _raises(_tri(V, V + " " * (64 << 10), V), 12, "line length")


def test_link_count_above_32():
    links = " ".join(["0 0.01"] * 33)
    _raises(_tri(V, V + " 33 " + links, V), 12, "link count")
    ok = smd.read(_tri(V, V + " 32 " + " ".join(["0 0.01"] * 32), V).encode())
    assert ok.triangles.link_counts.tolist() == [-1, 32, -1]


def test_more_than_2_20_nodes():
    many = "".join(f"{i} \"b\" -1\n" for i in range((1 << 20) + 1))
    _raises("version 1\nnodes\n" + many + "end\n", (1 << 20) + 3, "node count")


def test_more_than_2_20_frames():
    frames = "time 0\n" * ((1 << 20) + 1)
    _raises("version 1\nnodes\n0 \"root\" -1\nend\nskeleton\n" + frames + "end\n", (1 << 20) + 6, "frame count")


def test_block_cut_at_a_record_boundary_reads_with_a_warning():
    text = _tri(V, V, V).rsplit("end\n", 1)[0]
    f = smd.read(text.encode())
    assert len(f.triangles) == 1
    assert any("triangles block is not closed" in w for w in f.warnings)


def test_bad_ids_and_cycles_are_kept_listed_and_refused():
    text = ("version 1\nnodes\n0 \"a\" 1\n1 \"b\" 0\n2 \"c\" -1\nend\nskeleton\ntime 0\n0 0 0 0 0 0 0\n"
            "7 0 0 0 0 0 0\nend\ntriangles\nmat\n" + V + "\n" + "2 0 0 0 0 0 1 0 0 1 9 1.0\n" + V + "\nend\n")
    f = smd.read(text.encode())  # kept by the codec
    assert f.skeleton[0].bones.tolist() == [0, 7]
    findings = [str(x) for x in check.validate(f)]
    assert any("line 3" in x and "cycle" in x for x in findings) or any("line 4" in x and "cycle" in x
                                                                         for x in findings)
    assert any("line 10" in x and "bone id 7" in x for x in findings)
    assert any("line 15" in x and "link bone 9" in x for x in findings)
    with pytest.raises(FormatError, match=r"line [34]: .*cycle"):
        smd.write(f)
    lines: list[str] = []
    assert check.check("x.smd", text.encode(), lines.append) == 1
    assert lines[-1].startswith("roundtrip: write failed")
    f.nodes[0].parent = -1  # changed records are written, and refused while a fault is left
    with pytest.raises(FormatError, match=r"line 10: bone id 7"):
        smd.write(f)


def test_changed_records_are_written_anew():
    data = CUBE.read_bytes()
    f = smd.read(data)
    f.triangles.positions[0, 2] = 1.5
    written = smd.write(f)
    assert written != data and smd.read(written).triangles.positions[0, 2] == 1.5
    f.triangles.positions[0, 2] = 1.0
    _same_tokens(data, smd.write(f))


def test_check_warns_about_small_links_and_sums():
    text = _tri(V + " 2 0 0.04 0 0.96", V + " 1 0 0.5", V + " 1 0 1.0")
    findings = [str(x) for x in check.validate(smd.read(text.encode()))]
    assert any("line 11" in x and "under 0.05" in x for x in findings)
    assert any("line 12" in x and "sum to 0.500000" in x for x in findings)
    assert not any("line 13" in x for x in findings)
    assert all(x.startswith("warning") for x in findings)


def test_errors_are_format_errors_only():
    base = (SMD_DIR / "bst_Overlapping_DifferentWeights.smd").read_bytes()
    for n in range(0, len(base), 7):
        try:
            smd.read(base[:n])
        except FormatError:
            pass
    rng = np.random.default_rng(5)
    for _ in range(200):
        b = bytearray(base)
        for at in rng.integers(0, len(b), 4):
            b[at] = int(rng.integers(0, 256))
        try:
            f = smd.read(bytes(b))
            smd.read(smd.write(f))  # what reads writes back as text that reads again
        except FormatError:
            pass


@pytest.mark.parametrize("data", [b"\x1e", b'version 1\nnodes\n99999999999999999999999 "a" -1\nend\n',
                                  b'version 1\nnodes\n0 "a" -1\nend\nskeleton\ntime 999999999999999999999999\nend\n'])
def test_unreadable_lines_raise_format_error(data):
    """A line of a control byte alone, a node id or a time beyond 64 bits (found by fuzzing)."""
    with pytest.raises(FormatError):
        smd.read(data)


@pytest.mark.parametrize("line", ['0 "root -1', '0 root" -1'])
def test_node_name_with_an_unterminated_quote_is_refused(line):
    e = _raises(f"version 1\nnodes\n{line}\nend\n", 3, "node name")
    assert "no closing quote" in str(e)


def test_check_reports_a_vta_vertex_without_a_row_in_frame_0():
    """Import refuses a shape row whose vertex frame 0 lacks (io_smd/smd/convert.py): check reports it as an error
    with its line and field, not a pass."""
    text = ("version 1\nnodes\n0 \"root\" -1\nend\nskeleton\ntime 0\ntime 1 # Key 1\nend\nvertexanimation\n"
            "time 0\n0 0 0 0 0 0 1\n1 1 0 0 0 0 1\ntime 1\n1 1 1 0 0 0 1\n7 2 0 0 0 0 1\nend\n")
    findings = check.validate(smd.read(text.encode()))
    errors = [str(x) for x in findings if x.severity == "error"]
    assert len(errors) == 1 and "line 15" in errors[0] and "vertex 7" in errors[0] and "frame 0" in errors[0]
    assert findings[0].field == "vertex id"
    lines: list[str] = []
    assert check.check("x.vta", text.encode(), lines.append) == 1


def test_random_bytes_are_quoted_short_and_escaped():
    noise = bytes(np.random.default_rng(7).integers(0, 256, 300, dtype=np.uint8)).replace(b"\n", b"\x0b")
    with pytest.raises(FormatError) as e:
        smd.read(b"\x01\x1b[2J" + noise)
    text = str(e.value)
    assert "\\x01\\x1b[2J" in text and "…" in text and len(text) < 200
    assert all(c.isprintable() for c in text) and "\ufffd" not in text and "\\udc" not in text
