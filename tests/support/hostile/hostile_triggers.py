"""Hostile trigger sidecars (`<anim>.xml` / `.json`, docs/urho.md §4.5): a text format, so the attacks
are deep nesting, huge blocks, entity expansion, encodings, numbers that do not fit and wrong JSON shapes."""
from __future__ import annotations

from .hostile_cases import ANY, REJECT, VALID, Case

LIMIT = 4 << 20  # triggers.MAX_SIDECAR_BYTES

XML = (b'<?xml version="1.0"?>\n<animation>\n\t<trigger time="0.5" type="String" value="Step" />\n'
       b'\t<trigger normalizedtime="1" type="Int" value="7" />\n</animation>\n')
JSON = (b'{"triggers": [{"time": 0.5, "type": "String", "value": "Step"}, '
        b'{"normalizedTime": 1, "type": "Int", "value": 7}]}')


def _xml(body: bytes, head: bytes = b'<?xml version="1.0"?>') -> bytes:
    return head + b"<animation>" + body + b"</animation>"


def _trigger(attrs: str) -> bytes:
    return f"<trigger {attrs} />".encode()


def cases() -> list[Case]:
    laughs = (b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
              + b"".join(f'<!ENTITY lol{i} "{("&lol" + str(i - 1) + ";") * 10 if i > 1 else "&lol;" * 10}">'.encode()
                         for i in range(1, 10))
              + b']><animation><trigger time="1" type="String" value="&lol9;"/></animation>')
    return [
        Case("empty", b"", REJECT, "zero-length"),
        Case("one byte <", b"<", REJECT, "1-byte file"),
        Case("one byte {", b"{", REJECT, "1-byte file"),
        Case("NUL byte", b"\0", REJECT, "1-byte file"),
        Case("XML base", XML, VALID, "base"),
        Case("JSON base", JSON, VALID, "base"),
        Case("XML nested 100000 deep", _xml(b"<a>" * 100_000 + b"</a>" * 100_000), VALID, "deep nesting"),
        Case("XML nested past the size cap", _xml(b"<a>" * 600_000 + b"</a>" * 600_000), REJECT, "deep + huge"),
        Case("JSON nested 100000 deep", b'{"triggers": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", REJECT,
             "deep nesting"),
        Case("JSON value nested 500 deep", b'{"triggers": [{"time": 1, "type": "Vector3", "value": '
             + b"[" * 500 + b"]" * 500 + b"}]}", VALID, "nested value kept as text"),
        Case("XML one byte above the size cap", _xml(b"<!--" + b"x" * LIMIT + b"-->"), REJECT, "huge block"),
        Case("JSON one byte above the size cap", b'{"triggers": [], "pad": "' + b"x" * LIMIT + b'"}', REJECT,
             "huge block"),
        Case("XML 3.9 MiB attribute", _xml(_trigger(f'time="1" type="String" value="{"v" * (LIMIT - 200_000)}"')),
             VALID, "huge value under the cap"),
        Case("XML 40000 triggers", _xml(_trigger('time="0.25" type="Int" value="3"') * 40_000), VALID,
             "many elements"),
        Case("XML billion laughs", laughs, REJECT, "entity expansion"),
        Case("XML external entity", b'<?xml version="1.0"?><!DOCTYPE a [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
             b'<animation><trigger time="1" type="String" value="&x;"/></animation>', REJECT, "external entity"),
        Case("XML parameter entity", b'<!DOCTYPE a [<!ENTITY % p SYSTEM "http://example.invalid/x.dtd"> %p;]>'
             b"<animation/>", REJECT, "parameter entity"),
        Case("XML undefined entity", _xml(_trigger('time="1" type="String" value="&nope;"')), REJECT, "entity"),
        Case("XML unknown encoding", _xml(b"", b'<?xml version="1.0" encoding="x-hostile"?>'), REJECT,
             "encoding declaration naming no codec"),
        Case("XML UTF-16 with BOM", "\ufeff".encode("utf-16-le") + _xml(_trigger('time="1"')).decode()
             .replace('<?xml version="1.0"?>', "").encode("utf-16-le"), ANY, "UTF-16"),
        Case("XML not UTF-8", _xml(_trigger('time="1" type="String" value="\xff"').replace(b"\xc3\xbf", b"\xff")),
             REJECT, "invalid UTF-8"),
        Case("XML unclosed", b"<animation><trigger time='1'", REJECT, "truncated"),
        Case("XML time NaN / Inf / 1e999", _xml(_trigger('time="nan"') + _trigger('time="-inf"')
                                                + _trigger('time="1e999"')), VALID, "non-finite kept"),
        Case("XML time not a number", _xml(_trigger('time="soon"')), REJECT, "bad number"),
        Case("XML Int of 5000 digits", _xml(_trigger(f'time="1" type="Int" value="{"9" * 5000}"')), REJECT,
             "integer too long to convert"),
        Case("XML Float 1e999", _xml(_trigger('time="1" type="Float" value="1e999"')), VALID, "Inf kept"),
        Case("XML unknown type", _xml(_trigger('time="1" type="Vector3" value="1 2 3"')), VALID, "kept raw"),
        Case("JSON root is an array", b"[1, 2]", REJECT, "shape"),
        Case("JSON triggers is an object", b'{"triggers": {"time": 1}}', REJECT, "shape"),
        Case("JSON trigger is a number", b'{"triggers": [1]}', REJECT, "shape"),
        Case("JSON time is true", b'{"triggers": [{"time": true}]}', REJECT, "bool is not a number"),
        Case("JSON time is a list", b'{"triggers": [{"time": [1]}]}', REJECT, "shape"),
        Case("JSON time 10^400", b'{"triggers": [{"time": 1' + b"0" * 400 + b"}]}", REJECT, "overflow"),
        Case("JSON time 1e999 and NaN", b'{"triggers": [{"time": 1e999}, {"time": NaN}]}', VALID, "non-finite kept"),
        Case("JSON Int of 5000 digits", b'{"triggers": [{"time": 1, "type": "Int", "value": ' + b"9" * 5000 + b"}]}",
             REJECT, "integer too long to convert"),
        Case("JSON type is a number", b'{"triggers": [{"time": 1, "type": 3}]}', REJECT, "shape"),
        Case("JSON not UTF-8", b'{"triggers": [{"time": 1, "type": "String", "value": "\xff"}]}', REJECT,
             "invalid UTF-8"),
        Case("JSON truncated", JSON[:-5], REJECT, "truncated"),
    ]


def seeds() -> list[tuple[str, bytes]]:
    return [
        ("generated XML", XML), ("generated JSON", JSON),
        ("generated XML declared encoding", _xml(_trigger('time="0.1" type="Bool" value="true"'),
                                                 b'<?xml version="1.0" encoding="utf-8"?>')),
        ("generated XML every type", _xml(b"".join(_trigger(a) for a in (
            'time="0" type="Float" value="0.5"', 'time="1" type="Int64" value="-9"', 'normalizedtime="0.5"',
            'time="2" type="Vector3" value="1 2 3"', 'time="3" type="Double" value="1e-3"')))),
        ("generated JSON every type", b'{"triggers": [{"time": 0, "type": "Bool", "value": false}, {"time": 1, '
         b'"type": "Float", "value": 2.5}, {"normalizedTime": 0.5}, {"time": 2, "type": "Color", "value": [1, 0]}]}'),
    ]
