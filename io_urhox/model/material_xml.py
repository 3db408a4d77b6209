"""Urho3D PBR material XML for UrhoX (docs/urho.md §5.3): technique, textures and parameters."""
from __future__ import annotations

from xml.sax.saxutils import quoteattr

from ...core import model as cm

TECHNIQUE_DIR = "Techniques/PBR/"


def technique(mat: cm.Material) -> str:
    """PBRDiffAlpha when alpha blends or clips, PBRNoTexture without a base colour texture, else PBRDiff."""
    if mat.base_color_texture is None:
        return "PBRNoTexture"
    if mat.alpha_mode in ("BLEND", "CLIP"):
        return "PBRDiffAlpha"
    return "PBRDiff"


def _num(x: float) -> str:
    return f"{float(x):.6g}"


def material_xml(mat: cm.Material, textures: dict[str, str]) -> str:
    """`textures`: unit → path relative to the output folder (diffuse, normal, specular, emissive).

    Urho3D PBR parameters: MatDiffColor (RGBA), MatEmissiveColor (RGB), Metallic, Roughness; the
    metallic-roughness map goes in the `specular` unit as Urho3D's PBR shaders read it.
    """
    lines = ["<?xml version=\"1.0\"?>", "<material>",
             f"    <technique name={quoteattr(TECHNIQUE_DIR + technique(mat) + '.xml')} />"]
    for unit in ("diffuse", "normal", "specular", "emissive"):
        if unit in textures:
            lines.append(f"    <texture unit=\"{unit}\" name={quoteattr(textures[unit])} />")
    params = [("MatDiffColor", " ".join(_num(c) for c in mat.base_color[:4])),
              ("MatEmissiveColor", " ".join(_num(c) for c in mat.emissive[:3])),
              ("Metallic", _num(mat.metallic)), ("Roughness", _num(mat.roughness))]
    if mat.alpha_mode == "CLIP":
        params.append(("AlphaCutoff", _num(mat.alpha_cutoff)))
    for name, value in params:
        lines.append(f"    <parameter name=\"{name}\" value=\"{value}\" />")
    if mat.double_sided:
        lines.append("    <cull value=\"none\" />")
    lines.append("</material>")
    return "\n".join(lines) + "\n"
