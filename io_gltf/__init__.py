"""glTF 2.0 (.glb, .gltf): read through Blender's own glTF importer (convert's usual source format)."""
from ..core.formatspec import FormatSpec


def _sniff(head: bytes) -> bool:
    if head[:4] == b"glTF":
        return True
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    return text[:1] == b"{" and b'"asset"' in head


FORMATS = (
    FormatSpec(
        name="gltf", label="glTF 2.0", kind="model", extensions=(".glb", ".gltf"),
        sniff=_sniff, head=4096, weak=True, import_operator="import_scene.gltf",
        foreign_operators=True,
        capabilities={"blender_import": "io_gltf.blender_io:blender_import",
                      "check": "io_gltf.check:check_gltf", "info": "io_gltf.info:info"}),
)
