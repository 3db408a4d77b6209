"""Hostile PMD models: the seeds are support/pmd_writer.py's model with and without its optional sections (English
names and toons, physics); the generic suite cuts them at every point and smashes every count. PMD is read only
(no writer to write back)."""
from __future__ import annotations

from support.pmd_writer import write_pmd

BYTE_EXACT = False  # nothing writes PMD


def seeds() -> list[tuple[str, bytes]]:
    return [("pmd writer", write_pmd()), ("pmd writer, no extensions", write_pmd(extensions=False)),
            ("pmd writer, no physics", write_pmd(physics=False))]


def cases() -> list:
    return []
