"""NWN2's archives read as folders (docs/nwn2.md §5.8 "Archives"): the game's `Data/*.zip` and the ERF-family packs
of modules (`.hak`, `.erf`, `.mod`), so a part's skeleton is found, and a part read, without unpacking anything.

ERF: a 160-byte header (file type `HAK `/`ERF `/`MOD `/`SAV `, version `V1.0` or `V1.1`, counts and the offsets of
the localized strings, the key list and the resource list), a key list (per member: its name, NUL-padded, 16 bytes
in V1.0 and 32 in NWN2's V1.1, a u32 resource id, a u16 resource type, 2 unused bytes) and a resource list (per
member: u32 offset, u32 size). The member's extension is its resource type (`RESOURCE_TYPES`).

Archives are untrusted input; the whole archive is read once through `core.fileio.read_bytes` and every member is
a slice of it (ERF) or unpacked under the archive's reading budget (ZIP, `core.budget.Budget`). Refused, each in
one line (FormatError naming the offset and the field): a member name with `..`, a path separator, a drive or a
NUL; two members of one name (case ignored, as the game's resource names are); a count, offset or size outside
the file; members whose bytes overlap each other or the archive's tables; a ZIP member that is encrypted, uses a
method other than stored or deflate, or unpacks to more than it declares or than the budget allows. Nothing is
ever written to disk by the reader.

`write_erf` makes a V1.1 pack (`HAK ` by default) a module can use; `split_member("pack.hak:head.mdb")` tells an
archive member given on the command line from a path.
"""
from __future__ import annotations

import io
import os
import struct
import zipfile
import zlib
from dataclasses import dataclass

from ...core.budget import Budget, fits
from ...core.errors import FormatError
from ...core.fileio import read_bytes

ERF_EXTENSIONS = (".hak", ".erf", ".mod")
ZIP_EXTENSIONS = (".zip",)
ARCHIVE_EXTENSIONS = ERF_EXTENSIONS + ZIP_EXTENSIONS
ERF_TYPES = (b"HAK ", b"ERF ", b"MOD ", b"SAV ")
ERF_HEADER = 160
# the NWN2 resource types of what a model needs (xoreos' list of Aurora resource types agrees); any other type
# keeps its number as the extension (".4007"), so it is listed and never mistaken for a model
RESOURCE_TYPES = {3: "tga", 10: "txt", 2017: "2da", 2033: "dds", 4000: "mdb", 4001: "mda", 4003: "gr2"}
TYPE_OF_EXTENSION = {ext: t for t, ext in RESOURCE_TYPES.items()}
MAX_MEMBERS = 131072  # far above any pack (the game's largest Data zip holds tens of thousands)
MAX_ARCHIVE_BYTES = 4 << 30
ZIP_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)


@dataclass(frozen=True)
class Member:
    name: str  # as the archive spells it, with its extension
    offset: int  # where its bytes (ERF) or its local header (ZIP) start
    size: int  # the bytes it holds in the archive
    unpacked: int  # the bytes it unpacks to
    method: int = zipfile.ZIP_STORED
    crc: int = 0  # ZIP: the CRC-32 its central directory gives


def is_archive(path: str) -> bool:
    return os.path.splitext(str(path))[1].lower() in ARCHIVE_EXTENSIONS


def split_member(spec: str) -> tuple[str, str] | None:
    """("pack.hak", "head.mdb") for "pack.hak:head.mdb"; None when `spec` names no archive member (a plain path,
    or a Windows drive "C:\\...")."""
    for ext in ARCHIVE_EXTENSIONS:
        at = spec.lower().rfind(ext + ":")
        if at > 0:
            return spec[:at + len(ext)], spec[at + len(ext) + 1:]
    return None


def check_name(name: str, offset: int | None, field: str) -> str:
    """`name` when it is a plain member name; FormatError otherwise (it could lead out of a folder if extracted)."""
    if not name or name == "." or any(bad in name for bad in ("\0", "/", "\\", ":", "..")):
        raise FormatError(f"member name {name!r} is not a plain file name (a path, '..', a drive or a NUL)",
                          offset, field)
    return name


def _no_overlaps(spans: list[tuple[int, int, str]], field: str) -> None:
    """`spans` (start, end, what) must not share a byte."""
    spans = sorted(s for s in spans if s[1] > s[0])
    for (s0, e0, w0), (s1, e1, w1) in zip(spans, spans[1:]):
        if s1 < e0:
            raise FormatError(f"{w1} (bytes {s1}-{e1}) overlaps {w0} (bytes {s0}-{e0})", s1, field)


def _unique(members: list[Member]) -> dict[str, Member]:
    out: dict[str, Member] = {}
    for m in members:
        key = m.name.lower()
        if key in out:
            raise FormatError(f"member {m.name} is in the archive twice", m.offset, "member name")
        out[key] = m
    return out


def parse_erf(data: bytes, budget: Budget | None = None) -> list[Member]:
    """The members of an ERF pack (V1.0 or V1.1), every field checked against the bytes before use."""
    budget = budget or Budget(len(data), "archive")
    if len(data) < ERF_HEADER:
        raise FormatError(f"{len(data)} bytes, shorter than the {ERF_HEADER}-byte ERF header", 0, "header")
    kind, version = data[:4], data[4:8]
    if kind not in ERF_TYPES:
        raise FormatError(f"file type {kind!r} is none of {b', '.join(ERF_TYPES)!r}", 0, "FileType")
    if version not in (b"V1.0", b"V1.1"):
        raise FormatError(f"ERF version {version!r} is not V1.0 or V1.1 (NWN and NWN2 packs)", 4, "Version")
    _langs, desc_size, count, off_desc, off_keys, off_res = struct.unpack_from("<6I", data, 8)
    if count > MAX_MEMBERS:
        raise FormatError(f"{count} members, above the {MAX_MEMBERS} an archive may hold", 16, "EntryCount")
    name_len = 32 if version == b"V1.1" else 16
    key_size = name_len + 8
    for value, at, field, size in ((off_keys, 24, "OffsetToKeyList", count * key_size),
                                   (off_res, 28, "OffsetToResourceList", count * 8),
                                   (off_desc, 20, "OffsetToLocalizedString", desc_size)):
        if value < ERF_HEADER and size:
            raise FormatError(f"{value} lies inside the {ERF_HEADER}-byte header", at, field)
        fits(size, 1, len(data) - value, at, field)
    budget.objects(count, 16, "EntryCount")
    spans = [(0, ERF_HEADER, "the header"), (off_keys, off_keys + count * key_size, "the key list"),
             (off_res, off_res + count * 8, "the resource list"), (off_desc, off_desc + desc_size,
                                                                  "the localized strings")]
    members = []
    for i in range(count):
        at = off_keys + i * key_size
        raw = data[at:at + name_len].split(b"\0", 1)[0]
        try:
            stem = raw.decode("ascii")
        except UnicodeDecodeError:
            raise FormatError(f"member {i} name {raw!r} is not ASCII", at, "ResRef") from None
        res_id, res_type = struct.unpack_from("<IH", data, at + name_len)
        if res_id >= count:
            raise FormatError(f"member {i} ({stem}) resource id {res_id}, {count} resources", at + name_len,
                              "ResID")
        offset, size = struct.unpack_from("<2I", data, off_res + 8 * res_id)
        if offset + size > len(data):
            raise FormatError(f"member {stem} bytes {offset}-{offset + size} past the end ({len(data)} bytes)",
                              off_res + 8 * res_id, "OffsetToResource")
        name = check_name(f"{stem}.{RESOURCE_TYPES.get(res_type, res_type)}", at, "ResRef")
        members.append(Member(name, offset, size, size))
        spans.append((offset, offset + size, f"member {name}"))
    _no_overlaps(spans, "OffsetToResource")
    return members


def write_erf(members: list[tuple[str, bytes]], kind: bytes = b"HAK ") -> bytes:
    """A V1.1 pack of `members` ((name with extension, bytes)); names at most 32 characters before the extension,
    extensions among `RESOURCE_TYPES`' (ValueError naming the member otherwise)."""
    count = len(members)
    off_keys = ERF_HEADER
    off_res = off_keys + 40 * count
    data_at = off_res + 8 * count
    keys, table, blobs = [], [], []
    seen: set[str] = set()
    for i, (name, blob) in enumerate(members):
        if name.lower() in seen:  # the game's names ignore case: the reader refuses a pack holding both
            raise ValueError(f"{name}: two members of this name (case ignored) cannot share a pack")
        seen.add(name.lower())
        stem, ext = os.path.splitext(name)
        res_type = TYPE_OF_EXTENSION.get(ext[1:].lower())
        if res_type is None or len(stem.encode("ascii", "replace")) > 32 or not stem:
            raise ValueError(f"{name}: an ERF member needs a name of 1-32 ASCII characters and one of the "
                             f"extensions {', '.join(sorted(TYPE_OF_EXTENSION))}")
        check_name(name, None, "member name")
        keys.append(struct.pack("<32sIHH", stem.encode("ascii"), i, res_type, 0))
        table.append(struct.pack("<2I", data_at, len(blob)))
        blobs.append(blob)
        data_at += len(blob)
    header = struct.pack("<4s4s9I116s", kind, b"V1.1", 0, 0, count, ERF_HEADER, off_keys, off_res, 0, 0,
                         0xFFFFFFFF, bytes(116))
    return b"".join([header, *keys, *table, *blobs])


def _zip_local_span(data: bytes, info: zipfile.ZipInfo) -> tuple[int, int]:
    at = info.header_offset
    if at + 30 > len(data) or data[at:at + 4] != b"PK\x03\x04":
        raise FormatError(f"member {info.filename}: no local header at {at}", at, "local header")
    name_len, extra_len = struct.unpack_from("<2H", data, at + 26)
    start = at + 30 + name_len + extra_len
    if start + info.compress_size > len(data):
        raise FormatError(f"member {info.filename} bytes {start}-{start + info.compress_size} past the end "
                          f"({len(data)} bytes)", at, "compressed size")
    return start, start + info.compress_size


def parse_zip(data: bytes, budget: Budget | None = None) -> list[Member]:
    """The members of a ZIP (folders skipped), each checked: plain name, stored or deflate, not encrypted, inside
    the file, not overlapping another, its declared size within the budget."""
    budget = budget or Budget(len(data), "archive")
    try:
        infos = zipfile.ZipFile(io.BytesIO(data)).infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError) as e:
        raise FormatError(f"not a ZIP archive ({e})", None, "central directory") from None
    if len(infos) > MAX_MEMBERS:
        raise FormatError(f"{len(infos)} members, above the {MAX_MEMBERS} an archive may hold", None,
                          "central directory")
    budget.objects(len(infos), None, "central directory")
    members, spans = [], []
    for info in infos:
        if info.is_dir():
            continue
        # the game's Data zips keep models in folders (e.g. "lod-merged/..."): the member's own name is its last
        # part; a name that climbs out, or is absolute, is refused whole
        parts = info.filename.split("/")
        if info.filename.startswith(("/", "\\")) or any(p in ("..", "") for p in parts):
            raise FormatError(f"member name {info.filename!r} is not a plain relative path", info.header_offset,
                              "file name")
        for p in parts:
            check_name(p, info.header_offset, "file name")
        if info.flag_bits & 1:
            raise FormatError(f"member {info.filename} is encrypted", info.header_offset, "flags")
        if info.compress_type not in ZIP_METHODS:
            raise FormatError(f"member {info.filename} uses compression method {info.compress_type} (stored or "
                              f"deflate only)", info.header_offset, "compression method")
        start, end = _zip_local_span(data, info)
        spans.append((info.header_offset, end, f"member {info.filename}"))
        members.append(Member(info.filename, info.header_offset, info.compress_size, info.file_size,
                              info.compress_type, info.CRC))
    _no_overlaps(spans, "local header offset")
    return members


class Archive:
    """An archive read once; `names()` lists its members, `read(name)` gives one member's bytes."""

    def __init__(self, path: str, data: bytes | None = None, limit: int = MAX_ARCHIVE_BYTES):
        self.path = str(path)
        self.data = read_bytes(self.path, limit) if data is None else data
        self.budget = Budget(len(self.data), "archive")
        self.is_zip = self.data[:4] in (b"PK\x03\x04", b"PK\x05\x06")
        members = parse_zip(self.data, self.budget) if self.is_zip else parse_erf(self.data, self.budget)
        self.members = _unique(members)
        # a ZIP member is also found by its own name (the part after its folders), unless two share it
        by_base: dict[str, list[Member]] = {}
        for m in members:
            by_base.setdefault(m.name.rsplit("/", 1)[-1].lower(), []).append(m)
        self.by_base = {k: v[0] for k, v in by_base.items() if len(v) == 1}

    def names(self) -> list[str]:
        return sorted(m.name for m in self.members.values())

    def find(self, name: str) -> Member | None:
        key = name.lower()
        return self.members.get(key) or self.by_base.get(key)

    def read(self, name: str) -> bytes:
        m = self.find(name)
        if m is None:
            raise FormatError(f"{self.path} holds no member {name}", None, "member name")
        self.budget.unpack(m.unpacked, m.offset, f"member {m.name}")
        if not self.is_zip:
            return self.data[m.offset:m.offset + m.size]
        start, end = _zip_local_span(self.data, _info(m))
        raw = self.data[start:end]
        if m.method == zipfile.ZIP_STORED:
            out = raw
        else:
            d = zlib.decompressobj(-15)
            try:
                out = d.decompress(raw, m.unpacked + 1)
            except zlib.error as e:
                raise FormatError(f"member {m.name}: deflate stream broken ({e})", m.offset, "data") from None
        if len(out) != m.unpacked:
            raise FormatError(f"member {m.name} unpacks to {'more than ' if len(out) > m.unpacked else ''}"
                              f"{len(out)} bytes, it declares {m.unpacked}", m.offset, "uncompressed size")
        if zlib.crc32(out) != m.crc:
            raise FormatError(f"member {m.name}: CRC-32 does not match its bytes", m.offset, "crc-32")
        return out


def _info(m: Member) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(m.name)
    info.header_offset, info.compress_size = m.offset, m.size
    return info


def read_member(spec: str) -> tuple[Archive, bytes]:
    """(archive, bytes) of "pack.hak:member.mdb"."""
    split = split_member(spec)
    if split is None:
        raise FormatError(f"{spec} names no archive member (write pack.hak:member.mdb)", None, "path")
    archive = Archive(split[0])
    return archive, archive.read(split[1])


def member_of(path: str) -> tuple[str, str] | None:
    """(archive, member) when `path` names an archive member ("pack.hak:head.mdb") and no file has that name."""
    split = split_member(str(path))
    return None if split is None or os.path.lexists(str(path)) else split


def read_input(path: str, limit: int | None = None) -> bytes:
    """The bytes of an input given as a path or as an archive member (`member_of`): one read of the archive, one
    unpacking of the member."""
    if member_of(path) is None:
        return read_bytes(path) if limit is None else read_bytes(path, limit)
    return read_member(str(path))[1]


def member_names(path: str, extensions: tuple[str, ...] = (".mdb", ".gr2")) -> list[str]:
    """The members of the archive at `path` whose names end in one of `extensions` (case ignored), in name order:
    what File › Import lists after an archive is chosen."""
    return [n for n in Archive(path).names() if n.lower().endswith(extensions)]


def member_input(path: str) -> bytes | None:
    """The registry's reader of archive members (io_mdb's MEMBER_READER): the bytes of the member `path` names, or
    None when it names none (FormatError naming the archive's fault when it does but cannot be read)."""
    return None if member_of(path) is None else read_member(str(path))[1]
