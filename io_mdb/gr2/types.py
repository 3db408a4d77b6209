"""The Granny 2.6 type tree NWN2's own files carry (docs/nwn2.md §5.6), as `write.TypeDef`s: member names,
kinds, order and array lengths as read from the public files (the root is the same in skeleton and animation
files), and the curve types our writer uses.
"""
from __future__ import annotations

from . import gr2
from .write import Field, TypeDef

KINDS = {name: kind for kind, name in gr2.KIND_NAMES.items()}

# type → (member, kind, member type, array length); the names of types are ours, the members' are Granny's
TABLE: dict[str, tuple[tuple, ...]] = {
    "FileInfo": (("ArtToolInfo", "reference", "ArtToolInfo"), ("ExporterInfo", "reference", "ExporterInfo"),
                 ("FromFileName", "string"), ("Textures", "array_of_references", "Texture"),
                 ("Materials", "array_of_references", "Material"), ("Skeletons", "array_of_references", "Skeleton"),
                 ("VertexDatas", "array_of_references", "VertexData"),
                 ("TriTopologies", "array_of_references", "TriTopology"), ("Meshes", "array_of_references", "Mesh"),
                 ("Models", "array_of_references", "Model"), ("TrackGroups", "array_of_references", "TrackGroup"),
                 ("Animations", "array_of_references", "Animation"), ("ExtendedData", "variant_reference")),
    "ArtToolInfo": (("FromArtToolName", "string"), ("ArtToolMajorRevision", "int32"),
                    ("ArtToolMinorRevision", "int32"), ("UnitsPerMeter", "real32"), ("Origin", "real32", None, 3),
                    ("RightVector", "real32", None, 3), ("UpVector", "real32", None, 3),
                    ("BackVector", "real32", None, 3)),
    "ExporterInfo": (("ExporterName", "string"), ("ExporterMajorRevision", "int32"),
                     ("ExporterMinorRevision", "int32"), ("ExporterCustomization", "int32"),
                     ("ExporterBuildNumber", "int32")),
    "Texture": (("FromFileName", "string"), ("TextureType", "int32"), ("Width", "int32"), ("Height", "int32"),
                ("Encoding", "int32"), ("SubFormat", "int32"), ("Layout", "inline", "PixelLayout"),
                ("Images", "reference_to_array", "Image"), ("ExtendedData", "variant_reference")),
    "Material": (("Name", "string"), ("Maps", "reference_to_array", "MaterialMap"),
                 ("Texture", "reference", "Texture"), ("ExtendedData", "variant_reference")),
    "Skeleton": (("Name", "string"), ("Bones", "reference_to_array", "Bone")),
    "VertexData": (("Vertices", "reference_to_variant_array"),
                   ("VertexComponentNames", "reference_to_array", "StringItem"),
                   ("VertexAnnotationSets", "reference_to_array", "VertexAnnotationSet")),
    "TriTopology": (("Groups", "reference_to_array", "TriGroup"), ("Indices", "reference_to_array", "Int32Item"),
                    ("Indices16", "reference_to_array", "Int16Item"),
                    ("VertexToVertexMap", "reference_to_array", "Int32Item"),
                    ("VertexToTriangleMap", "reference_to_array", "Int32Item"),
                    ("SideToNeighborMap", "reference_to_array", "Int32Item"),
                    ("BonesForTriangle", "reference_to_array", "Int32Item"),
                    ("TriangleToBoneIndices", "reference_to_array", "Int32Item"),
                    ("TriAnnotationSets", "reference_to_array", "TriAnnotationSet")),
    "Mesh": (("Name", "string"), ("PrimaryVertexData", "reference", "VertexData"),
             ("MorphTargets", "reference_to_array", "MorphTarget"), ("PrimaryTopology", "reference", "TriTopology"),
             ("MaterialBindings", "reference_to_array", "MaterialBinding"),
             ("BoneBindings", "reference_to_array", "BoneBinding"), ("ExtendedData", "variant_reference")),
    "Model": (("Name", "string"), ("Skeleton", "reference", "Skeleton"), ("InitialPlacement", "transform"),
              ("MeshBindings", "reference_to_array", "MeshBinding")),
    "TrackGroup": (("Name", "string"), ("VectorTracks", "reference_to_array", "VectorTrack"),
                   ("TransformTracks", "reference_to_array", "TransformTrack"),
                   ("TransformLODErrors", "reference_to_array", "Real32Item"),
                   ("TextTracks", "reference_to_array", "TextTrack"), ("InitialPlacement", "transform"),
                   ("AccumulationFlags", "int32"), ("LoopTranslation", "real32", None, 3),
                   ("PeriodicLoop", "reference", "PeriodicLoop"), ("RootMotion", "reference", "TransformTrack"),
                   ("ExtendedData", "variant_reference")),
    "Animation": (("Name", "string"), ("Duration", "real32"), ("TimeStep", "real32"), ("Oversampling", "real32"),
                  ("TrackGroups", "array_of_references", "TrackGroup")),
    "PixelLayout": (("BytesPerPixel", "int32"), ("ShiftForComponent", "int32", None, 4),
                    ("BitsForComponent", "int32", None, 4)),
    "Image": (("MIPLevels", "reference_to_array", "MIPLevel"),),
    "MaterialMap": (("Usage", "string"), ("Map", "reference", "Material")),
    "Bone": (("Name", "string"), ("ParentIndex", "int32"), ("Transform", "transform"),
             ("InverseWorldTransform", "real32", None, 16), ("LightInfo", "reference", "LightInfo"),
             ("CameraInfo", "reference", "CameraInfo"), ("ExtendedData", "variant_reference")),
    "StringItem": (("String", "string"),),
    "VertexAnnotationSet": (("Name", "string"), ("VertexAnnotations", "reference_to_variant_array"),
                            ("IndicesMapFromVertexToAnnotation", "int32"),
                            ("VertexAnnotationIndices", "reference_to_array", "Int32Item")),
    "TriGroup": (("MaterialIndex", "int32"), ("TriFirst", "int32"), ("TriCount", "int32")),
    "Int32Item": (("Int32", "int32"),),
    "Int16Item": (("Int16", "int16"),),
    "TriAnnotationSet": (("Name", "string"), ("TriAnnotations", "reference_to_variant_array"),
                         ("IndicesMapFromTriToAnnotation", "int32"),
                         ("TriAnnotationIndices", "reference_to_array", "Int32Item")),
    "MorphTarget": (("ScalarName", "string"), ("VertexData", "reference", "VertexData")),
    "MaterialBinding": (("Material", "reference", "Material"),),
    "BoneBinding": (("BoneName", "string"), ("OBBMin", "real32", None, 3), ("OBBMax", "real32", None, 3),
                    ("TriangleIndices", "reference_to_array", "Int32Item")),
    "MeshBinding": (("Mesh", "reference", "Mesh"),),
    "VectorTrack": (("Name", "string"), ("Dimension", "int32"), ("ValueCurve", "inline", "Curve")),
    "TransformTrack": (("Name", "string"), ("PositionCurve", "inline", "Curve"),
                       ("OrientationCurve", "inline", "Curve"), ("ScaleShearCurve", "inline", "Curve")),
    "Real32Item": (("Real32", "real32"),),
    "TextTrack": (("Name", "string"), ("Entries", "reference_to_array", "TextTrackEntry")),
    "PeriodicLoop": (("Radius", "real32"), ("dAngle", "real32"), ("dZ", "real32"), ("BasisX", "real32", None, 3),
                     ("BasisY", "real32", None, 3), ("Axis", "real32", None, 3)),
    "MIPLevel": (("Stride", "int32"), ("Pixels", "reference_to_array", "UInt8Item")),
    "LightInfo": (("ExtendedData", "variant_reference"),),
    "CameraInfo": (("ExtendedData", "variant_reference"),),
    "Curve": (("CurveData", "variant_reference"),),
    "TextTrackEntry": (("TimeStamp", "real32"), ("Text", "string")),
    "UInt8Item": (("UInt8", "uint8"),),
    # the curve formats we write (curves.py has every format's fields)
    "CurveDataHeader": (("Format", "uint8"), ("Degree", "uint8")),
    "DaK32fC32f": (("CurveDataHeader_DaK32fC32f", "inline", "CurveDataHeader"), ("Padding", "int16"),
                   ("Knots", "reference_to_array", "Real32Item"), ("Controls", "reference_to_array", "Real32Item")),
    "DaIdentity": (("CurveDataHeader_DaIdentity", "inline", "CurveDataHeader"), ("Dimension", "int16")),
    "D3Constant32f": (("CurveDataHeader_D3Constant32f", "inline", "CurveDataHeader"), ("Padding", "int16"),
                      ("Controls", "real32", None, 3)),
    "D4Constant32f": (("CurveDataHeader_D4Constant32f", "inline", "CurveDataHeader"), ("Padding", "int16"),
                      ("Controls", "real32", None, 4)),
}


def build() -> dict[str, TypeDef]:
    """Fresh TypeDefs of every type of TABLE, by our name."""
    types = {name: TypeDef() for name in TABLE}
    for name, members in TABLE.items():
        for member in members:
            member_name, kind, type_name, length = member + (None, 0)[len(member) - 2:]
            types[name].fields.append(Field(KINDS[kind], member_name, types[type_name] if type_name else None,
                                            length))
    return types
