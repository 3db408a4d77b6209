"""A glTF checked before Blender's importer reads it: the importer trusts every URI and every size of the file,
so this module reads the JSON with limits and hands the importer a copy that can only reach what was checked.

- JSON: nesting depth at most `MAX_DEPTH` (checked by a scan, before the parser recurses), at most `MAX_ITEMS`
  entries in any top-level list; buffer views inside their buffers, accessors inside their views (or, with no
  view, at most `MAX_ZERO_ELEMENTS`), every declared buffer length at most the bytes that really back it.
- URIs: a `data:` URI, or a relative path naming a regular file inside the model's folder (links resolved): no
  `..` out of it, no absolute path, no other scheme, no device, FIFO or /proc file. A buffer URI that fails is
  refused (FormatError naming it); an image URI that fails is dropped with a warning, and the textures that
  used it lose their source, so the importer never opens it.
- The copy: the checked JSON (as .gltf, or .glb with the file's own binary chunk) in a folder of the caller,
  each checked file reached through a link inside that folder under its own name, so the importer resolves
  nothing of the original file's URIs itself.
"""
from __future__ import annotations

import base64
import binascii
import json
import os
import struct
import urllib.parse
from dataclasses import dataclass, field

from ..core.errors import FormatError
from ..core.fileio import read_bytes

MAX_DEPTH = 64
MAX_ITEMS = 1 << 20
MAX_ZERO_ELEMENTS = 1 << 26  # an accessor with no buffer view is zeros the importer allocates
_GLB_JSON, _GLB_BIN = 0x4E4F534A, 0x004E4942
_COMPONENT_BYTES = {5120: 1, 5121: 1, 5122: 2, 5123: 2, 5125: 4, 5126: 4}
_TYPE_COUNT = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT2": 4, "MAT3": 9, "MAT4": 16}


@dataclass
class Checked:
    """What the importer is handed: the copy's path, the warnings, and the original file of each linked name."""
    path: str
    warnings: list[str] = field(default_factory=list)
    originals: dict[str, str] = field(default_factory=dict)  # path in the copy's folder → the checked file


def check_depth(text: bytes) -> None:
    """FormatError when arrays and objects nest deeper than MAX_DEPTH (a scan: no recursion)."""
    depth, in_string, escaped = 0, False, False
    for i, c in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif c == 0x5C:  # backslash
                escaped = True
            elif c == 0x22:
                in_string = False
        elif c == 0x22:
            in_string = True
        elif c in (0x5B, 0x7B):
            depth += 1
            if depth > MAX_DEPTH:
                raise FormatError(f"JSON nests deeper than {MAX_DEPTH} levels", i, "JSON depth")
        elif c in (0x5D, 0x7D):
            depth -= 1


def _split_glb(data: bytes) -> tuple[bytes, bytes | None]:
    if len(data) < 20:
        raise FormatError("file ends inside the GLB header", len(data), "header")
    _, version, length = struct.unpack_from("<4sII", data)
    if version != 2:
        raise FormatError(f"GLB version {version}; expected 2", 4, "version")
    if length > len(data):
        raise FormatError(f"declared length {length} is more than the file's {len(data)} bytes", 8, "length")
    n, kind = struct.unpack_from("<II", data, 12)
    if kind != _GLB_JSON or 20 + n > length:
        raise FormatError("the first chunk is not a JSON chunk inside the file", 12, "chunk")
    text, at, binary = data[20:20 + n], 20 + n + (-n % 4), None
    if at + 8 <= length:
        m, kind = struct.unpack_from("<II", data, at)
        if kind == _GLB_BIN:
            if at + 8 + m > length:
                raise FormatError(f"binary chunk of {m} bytes runs past the file's end", at, "chunk length")
            binary = data[at + 8:at + 8 + m]
    return text, binary


def _doc(text: bytes) -> dict:
    check_depth(text)
    try:
        doc = json.loads(text.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError) as e:
        raise FormatError(f"not a UTF-8 JSON document ({e})", 0, "JSON") from None
    if not isinstance(doc, dict):
        raise FormatError("the JSON document is not an object", 0, "JSON")
    for key, value in doc.items():
        if isinstance(value, list) and len(value) > MAX_ITEMS:
            raise FormatError(f"{len(value)} {key}, above the limit of {MAX_ITEMS}", None, key)
    for key in ("buffers", "bufferViews", "accessors", "images", "textures"):
        items = doc.get(key, [])
        if not isinstance(items, list) or not all(isinstance(x, dict) for x in items):
            raise FormatError(f"{key} is not a list of objects", None, key)
    return doc


def _local_file(uri: str, folder: str) -> tuple[str | None, str]:
    """(the real path of the regular file `uri` names inside `folder`, "") or (None, why it is not opened)."""
    if not isinstance(uri, str) or not uri:
        return None, "not a URI"
    if urllib.parse.urlsplit(uri).scheme:
        return None, "not a data: URI or a relative path"
    rel = urllib.parse.unquote(uri).replace("\\", "/")
    if rel.startswith("/") or os.path.isabs(rel) or "\0" in rel:
        return None, "an absolute path"
    base = os.path.realpath(folder)
    real = os.path.realpath(os.path.join(base, rel))
    if not real.startswith(base.rstrip(os.sep) + os.sep):
        return None, "leads out of the model's folder"
    if not os.path.exists(real):
        return None, "no such file"
    if not os.path.isfile(real):
        return None, "not a regular file"
    return real, ""


def _data_length(uri: str) -> int:
    head, sep, payload = uri.partition(";base64,")
    if not sep:
        head, sep, payload = uri.partition(",")
        return len(urllib.parse.unquote_to_bytes(payload))
    try:
        return len(base64.b64decode(payload, validate=False))
    except (binascii.Error, ValueError):
        raise FormatError(f"buffer URI {uri[:40]!r}…: not valid base64", None, "uri") from None


def _int(obj: dict, key: str, default: int | None = None) -> int:
    value = obj.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise FormatError(f"{key} {value!r} is not a count", None, key)
    return value


def _check_buffers(doc: dict, folder: str, binary: bytes | None) -> list[str | None]:
    """The real path of each file buffer (None for data: and GLB buffers); FormatError for a refused one."""
    files: list[str | None] = []
    for i, buf in enumerate(doc.get("buffers") or []):
        declared = _int(buf, "byteLength")
        uri = buf.get("uri")
        real = None
        if uri is None:
            if i != 0 or binary is None:
                raise FormatError(f"buffer {i} has no URI and no GLB binary chunk", None, "buffers")
            size, where = len(binary), "the GLB binary chunk"
        elif isinstance(uri, str) and uri.startswith("data:"):
            size, where = _data_length(uri), "its data: URI"
        else:
            real, why = _local_file(uri, folder)
            if real is None:
                raise FormatError(f"buffer URI {uri!r} refused: {why}", None, f"buffers[{i}].uri")
            size, where = os.path.getsize(real), repr(uri)
        if declared > size:
            raise FormatError(f"buffer {i} declares {declared} bytes but {where} holds {size}", None,
                              f"buffers[{i}].byteLength")
        files.append(real)
    return files


def _check_views(doc: dict) -> None:
    buffers = doc.get("buffers") or []
    views = doc.get("bufferViews") or []
    for i, view in enumerate(views):
        b = _int(view, "buffer")
        end = _int(view, "byteOffset", 0) + _int(view, "byteLength")
        if b >= len(buffers) or end > buffers[b]["byteLength"]:
            raise FormatError(f"buffer view {i} lies outside its buffer", None, f"bufferViews[{i}]")
    for i, acc in enumerate(doc.get("accessors") or []):
        count = _int(acc, "count")
        width = _COMPONENT_BYTES.get(acc.get("componentType"), 4) * _TYPE_COUNT.get(acc.get("type"), 16)
        if "bufferView" not in acc:
            if count * width > MAX_ZERO_ELEMENTS * 4:
                raise FormatError(f"accessor {i} asks for {count} elements with no data", None, f"accessors[{i}]")
            continue
        v = _int(acc, "bufferView")
        if v >= len(views):
            raise FormatError(f"accessor {i} names buffer view {v} of {len(views)}", None, f"accessors[{i}]")
        stride = _int(views[v], "byteStride", 0) or width
        end = _int(acc, "byteOffset", 0) + (stride * (count - 1) + width if count else 0)
        if end > views[v]["byteLength"]:
            raise FormatError(f"accessor {i}: {count} elements need {end} bytes, its buffer view holds "
                              f"{views[v]['byteLength']}", None, f"accessors[{i}].count")


def _check_images(doc: dict, folder: str, warnings: list[str]) -> dict[int, str]:
    """The real path of each image read from a file; images whose URI fails are cut off from their textures."""
    files: dict[int, str] = {}
    dropped: set[int] = set()
    for i, img in enumerate(doc.get("images") or []):
        uri = img.get("uri") if isinstance(img, dict) else None
        if uri is None or (isinstance(uri, str) and uri.startswith("data:")):
            continue
        real, why = _local_file(uri, folder)
        if real is None:
            warnings.append(f"image URI {uri!r} not opened ({why}): the image is left out")
            dropped.add(i)
            img.pop("uri", None)
        else:
            files[i] = real
    for tex in doc.get("textures") or []:
        if not isinstance(tex, dict):
            continue
        if tex.get("source") in dropped:
            del tex["source"]
        for name, ext in list((tex.get("extensions") or {}).items()):
            if isinstance(ext, dict) and ext.get("source") in dropped:
                del tex["extensions"][name]
    return files


def _link(folder: str, n: int, real: str, originals: dict[str, str]) -> str:
    """A link to `real` inside `folder` under the file's own name; its URI there."""
    sub = os.path.join(folder, "files", str(n))
    os.makedirs(sub, exist_ok=True)
    name = os.path.basename(real)
    os.symlink(real, os.path.join(sub, name))
    originals[os.path.join(sub, name)] = real
    return f"files/{n}/{urllib.parse.quote(name)}"


@dataclass
class Inspected:
    """A glTF that passed every check: its JSON (image URIs that failed removed), its GLB binary chunk, the real
    file of each file buffer and image, and the warnings (images left out)."""
    doc: dict
    binary: bytes | None
    buffer_files: list[str | None]
    image_files: dict[int, str]
    warnings: list[str]


def inspect(data: bytes, path: str) -> Inspected:
    """Every check of this module on the bytes of the glTF at `path` (its folder resolves the URIs); FormatError
    naming what is refused. `skinbridge check` reports the same checks as findings."""
    glb = data[:4] == b"glTF"
    text, binary = _split_glb(data) if glb else (data, None)
    doc = _doc(text)
    model_dir = os.path.dirname(os.path.abspath(path))
    buffer_files = _check_buffers(doc, model_dir, binary)
    _check_views(doc)
    warnings: list[str] = []
    image_files = _check_images(doc, model_dir, warnings)
    return Inspected(doc, binary, buffer_files, image_files, warnings)


def checked_copy(path: str, folder: str) -> Checked:
    """Check the glTF at `path` (FormatError naming what is refused) and write the copy the importer may read
    into `folder` (an empty folder the caller removes)."""
    data = read_bytes(path)
    glb = data[:4] == b"glTF"
    found = inspect(data, path)
    doc, binary, buffer_files, image_files = found.doc, found.binary, found.buffer_files, found.image_files
    out = Checked(os.path.join(folder, os.path.basename(path)), list(found.warnings))
    links = [(doc["buffers"][i], real) for i, real in enumerate(buffer_files) if real is not None]
    links += [(doc["images"][i], real) for i, real in image_files.items()]
    for n, (item, real) in enumerate(links):
        item["uri"] = _link(folder, n, real, out.originals)
    text = json.dumps(doc).encode("utf-8")
    if glb:
        text += b" " * (-len(text) % 4)
        chunks = struct.pack("<II", len(text), _GLB_JSON) + text
        if binary is not None:
            pad = b"\0" * (-len(binary) % 4)
            chunks += struct.pack("<II", len(binary) + len(pad), _GLB_BIN) + binary + pad
        text = struct.pack("<4sII", b"glTF", 2, 12 + len(chunks)) + chunks
    with open(out.path, "wb") as f:
        f.write(text)
    return out
