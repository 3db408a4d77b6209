"""`skinbridge check` for Wallpaper Engine textures (`.tex`).

The codec keeps what the layout allows but the meaning forbids (so that read → write stays byte-identical); this
module lists it as findings: a side outside what a texture can be, a mip that does not decompress or decode (each
mip decoded, a GIF's frames read), a sprite frame naming an image that is not there. `check` runs the pipeline of
core/check.py with these steps, then writes the records back and compares them with the file.
"""
from __future__ import annotations

from ...core.check import Checker, Findings
from ...core.errors import FormatError
from ...core.findings import Finding
from . import gif, tex


def validate_texture(t: tex.Texture) -> list[Finding]:
    out = Findings()
    out.warnings(t.warnings)
    at = t.offsets.get("format")
    sides = ("texture width", "texture height", "image width", "image height")
    for k, (name, side) in enumerate(zip(sides, (t.texture_width, t.texture_height, t.image_width, t.image_height))):
        if not 0 <= side <= tex.MAX_SIDE:
            out.add("error", "header", None if at is None else at + 8 + 4 * k, name,
                    f"{side} is outside 0..{tex.MAX_SIDE}")
    reason = tex.not_decoded(t)
    if reason:  # the mips are not pixels to decode: said once, not as an error per mip
        out.add("warning", "texture", None, "image format", reason)
    for k, mips in enumerate([] if reason else t.images):
        for j, mip in enumerate(mips):
            p = f"image {k} mip {j}"
            try:
                raw = tex.mip_bytes(t, k, j)
            except FormatError as e:
                out.add("error", p, e.offset, "data", str(e).split(": ", 1)[-1])
                continue
            try:
                if t.image_format == -1:
                    tex.decode_pixels(raw, mip.width, mip.height, t.format)
                elif k == j == 0 and tex.is_gif(t):  # import reads its frames
                    gif.frames(raw)
            except FormatError as e:
                out.add("error", p, t.offsets.get(f"{p} data"), "data", str(e).split(": ", 1)[-1])
    for f, fr in enumerate(t.frames):
        if not 0 <= fr.image < len(t.images):
            out.add("error", f"frame {f}", None, "image", f"image {fr.image} of {len(t.images)}")
    return out.items


check = Checker(read=tex.read, validate=validate_texture, write=tex.write)


def semantic(t: tex.Texture) -> list[str]:
    """What an import runs after reading a texture (hostile suite): every mip decoded; faults as warnings."""
    return [str(f) for f in validate_texture(t)]
