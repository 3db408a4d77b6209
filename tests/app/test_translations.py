"""The UI in zh_HANS, zh_HANT and ja_JP (issue 33, docs/blender.md §12): with the add-on registered,
every label, tooltip, enum item and message string is in all three tables with the same placeholders; the
tables use the glossary's words; formatted reports are translated through the placeholder templates.

The bpy wheel carries no locale data (the UI language cannot be switched headless), so what is tested is what
the add-on hands to `bpy.app.translations` and its own report translation."""
from __future__ import annotations

import importlib.util
import pathlib
import re
import textwrap

import bpy
import pytest

from skinbridge.blender import translations
from skinbridge.core import i18n

pytestmark = pytest.mark.blender

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _tool():
    spec = importlib.util.spec_from_file_location("i18n_strings", ROOT / "tools" / "i18n_strings.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def tables():
    return i18n.load_tables()


@pytest.fixture(scope="module")
def strings(addon):
    return _tool().all_strings("skinbridge")


def test_every_string_in_every_table(strings, tables):
    assert len(strings) > 300  # the walk found the operators, panels, properties and messages
    assert ("Operator", "Import MikuMikuDance Model") in strings  # an operator's name
    assert ("*", "Collision Group") in strings  # an operator property
    assert ("*", "Superimposed") in strings  # an enum item of a property group
    assert ("*", "Physics built for {name}") in strings  # a report with a value
    assert ("*", "Kept keys: {tracks_unchanged} of {tracks_kept} tracks unchanged") in strings  # marked with N_
    gaps = _tool().missing(strings, tables, i18n.keep_english())
    assert gaps == {language: [] for language in i18n.LANGUAGES}, "run tools/i18n_strings.py --tsv"


def test_placeholders_kept(tables):
    bad = [(lang, en, text) for lang, table in tables.items() for (_, en), text in table.items()
           if i18n.placeholders(en) != i18n.placeholders(text)]
    assert bad == []


def test_no_translation_is_its_english(tables):
    english = i18n.keep_english()
    same = [(lang, en) for lang, table in tables.items() for (_, en), text in table.items()
            if text == en and en not in english and i18n.has_words(en)]
    assert same == []
    assert {"UrhoX", "LZ4", "MMD"} <= english


def _term(word: str) -> re.Pattern:
    if word.isascii():
        return re.compile(rf"(?<![A-Za-z]){re.escape(word)}(s|es)?(?![A-Za-z])", re.I)
    return re.compile(re.escape(word))


def _words(english: str) -> str:
    """The English a user reads as words: no command-line flags, identifiers, paths, placeholders or quoted
    JSON."""
    return re.sub(r"--[\w-]+|\S*[_./<>{}]\S*", " ", re.sub(r'"[^"]*"', " ", english))


def test_tables_use_the_glossary(tables):
    glossary = i18n.load_glossary()
    assert {"armature", "bone", "physics", "morph", "全ての親", "センター", "足ＩＫ"} <= {g["en"] for g in glossary}
    bad, used = [], set()
    longest_first = sorted(glossary, key=lambda g: -len(g["en"]))  # "material morph" is 材質モーフ, not マテリアル
    for language, table in tables.items():
        for (_, en), text in table.items():
            words = _words(en)
            for term in longest_first:
                pattern = _term(term["en"])
                if pattern.search(words):
                    used.add(term["en"])
                    words = pattern.sub(" ", words)
                    if term[language] not in text:
                        bad.append(f"{language}: {term['en']} -> {term[language]} missing in {text!r}")
    assert bad == [], "\n".join(bad)
    assert {"rigid bodies", "Rest Position", "shape key", "全ての親", "material morph"} <= used  # terms met


def test_mmd_terms_as_mmd_users_know_them(tables):
    ja = tables["ja_JP"]
    assert ja[("Operator", "Build Physics")] == "物理演算を構築"
    assert ja[("*", "Collision Group")] == "衝突グループ"
    assert tables["zh_HANT"][("*", "Rest Position")] == "靜置姿態"
    assert "全ての親、センター" in tables["zh_HANS"][("*", "Add the MMD control bones (全ての親, センター, グルーブ, "
                                                      "腰, 上半身2, 足IK親, 足ＩＫ, つま先ＩＫ) and MMD bone names to "
                                                      "any humanoid or animal armature")]


def test_formatted_reports_translated():
    assert translations.translate("Rest Position: 3 difference(s), 2 bone(s) marked", "ja_JP") == \
        "レストポジション：相違 3 件、印を付けたボーン 2 本"
    # a file name before an exporter's message, and the warnings below a headline, one a line
    assert translations.translate("foo.pmx: nothing to export: no visible mesh", "zh_HANT") == \
        "foo.pmx: 沒有可匯出的內容：沒有可見的網格"
    report = "Imported 3 files: 2 warnings, see the SkinBridge panel or Info\n  a.smd: no shape keys to write as a VTA"
    assert translations.translate(report, "zh_HANS") == \
        "已导入 3 个文件：2 条警告，请查看 SkinBridge 面板或信息\n  a.smd: 没有可写为 VTA 的形态键"
    assert translations.translate("something unknown", "ja_JP") == "something unknown"
    # the last operation's name (an operator's, Operator context) before its headline in the sidebar
    assert translations.translate("Import MikuMikuDance Model: Imported miku.pmx", "ja_JP") == \
        "MikuMikuDance モデルをインポート: miku.pmx をインポートしました"
    assert translations.translate("Physics built for Miku", "en_US") == "Physics built for Miku"


def test_registered_with_the_add_on(addon, tables):
    registered = translations.translations_dict()
    assert set(registered) == set(i18n.LANGUAGES)
    ja = registered["ja_JP"]
    assert ja[("*", "Rest Compare")] == ja[("Operator", "Rest Compare")] == "レスト比較"
    assert len(ja) >= len(tables["ja_JP"])
    translations.unregister()
    try:
        assert translations._registered == []
    finally:
        translations.register("skinbridge")
    assert translations._registered == ["skinbridge"]


def test_tool_finds_messages_and_gaps(tmp_path):
    tool = _tool()
    (tmp_path / "ops.py").write_text(textwrap.dedent('''
        def execute(self, n, arm):
            self.report({"INFO"}, f"{arm.name} has {n} bone{'s' if n != 1 else ''}")
            layout.label(text="Plain label")
            raise ExportError("refused")
    '''), encoding="utf-8")
    found = tool.code_messages(tmp_path)
    assert set(found) == {"{name} has {n} bone", "{name} has {n} bones", "Plain label", "refused"}
    strings = {("*", text): where for text, where in found.items()}
    table = {("*", "Plain label"): "x", ("*", "refused"): "y", ("*", "{name} has {n} bone"): "z"}
    gaps = tool.missing(strings, {"ja_JP": table}, set())
    assert gaps == {"ja_JP": [("*", "{name} has {n} bones")]}


def test_broken_table_refused(tmp_path):
    (tmp_path / "ja_JP.tsv").write_text("context\tEnglish\ttranslation\n*\tA\tエー\n*\tA\tエー2\n", encoding="utf-8")
    with pytest.raises(ValueError, match="given twice"):
        i18n.load_table("ja_JP", tmp_path)
    (tmp_path / "ja_JP.tsv").write_text("context\tEnglish\ttranslation\n*\tA\n", encoding="utf-8")
    with pytest.raises(ValueError, match="row 2"):
        i18n.load_table("ja_JP", tmp_path)


def test_operator_reports_in_the_ui_language(clean_scene, monkeypatch, tmp_path):
    monkeypatch.setattr(translations, "_ui_language", lambda option: "ja_JP")  # headless Blender has no other locale
    arm = bpy.data.objects.new("Rig", bpy.data.armatures.new("Rig"))
    bpy.context.scene.collection.objects.link(arm)
    bpy.context.view_layer.objects.active = arm
    with pytest.raises(RuntimeError, match=r"1〜\d+ フレームを選んでください"):  # a message with a value
        bpy.ops.skinbridge.render_sheet(filepath=str(tmp_path / "sheet.png"), pose="FRAMES", frame_start=5,
                                        frame_end=1)
    monkeypatch.setattr(translations, "_ui_language", lambda option: None)  # Reports not ticked: English
    with pytest.raises(RuntimeError, match="choose 1 to"):
        bpy.ops.skinbridge.render_sheet(filepath=str(tmp_path / "sheet.png"), pose="FRAMES", frame_start=5,
                                        frame_end=1)
