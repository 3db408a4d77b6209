"""MMD materials in Blender (docs/mmd.md §4.10): every imported material's MMD Shader inputs and Solid-view colour
hold its PMX record; sphere (multiply / add / sub-texture) and toon images are wired by the record; Cycles shows
MMD's colour (the formula written out here) on planes facing the camera; the sphere and toon images are written
beside a PMX exported with its textures; a Workbench render of Luka shows each
material's diffuse colour; edits on the MMD Shader reach the exported file, and an unchanged export stays
byte-identical (test_pmx_blender.py)."""
from __future__ import annotations

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")
from mathutils import Vector  # noqa: E402

from skinbridge.core.png import encode_png  # noqa: E402
from skinbridge.io_pmx.blender_side import blender_mmd_material as mmdmat  # noqa: E402
from skinbridge.io_pmx.model import pmx  # noqa: E402

pytestmark = pytest.mark.blender

LUKA = "mmdtools_megurine_luka.pmx"
LIGHT = 154 / 255  # MMD's default light colour
TO_LIGHT = np.array([0.5, -0.5, 1.0]) / np.linalg.norm([0.5, -0.5, 1.0])  # −(MMD's (−0.5, −1, 0.5)), Blender axes


def _import(path):
    assert bpy.ops.import_scene.skinbridge_pmx(filepath=str(path)) == {"FINISHED"}
    mesh = next(o for o in bpy.data.objects if o.type == "MESH")
    return mesh, list(mesh.data.materials)


def _export(tmp_path, name="out.pmx"):
    out = tmp_path / name
    assert bpy.ops.export_scene.skinbridge_pmx(filepath=str(out)) == {"FINISHED"}
    return pmx.read_file(out)


def _f32(v):
    return np.asarray(v, np.float32).reshape(-1)


def _source(socket):
    assert socket.is_linked, socket.name
    link = socket.links[0]
    return link.from_node, link.from_socket.name


def test_node_inputs_and_solid_colour_equal_the_pmx_record(clean_scene, testdata):
    path = testdata / "pmx" / LUKA
    model = pmx.read_file(path)
    _, mats = _import(path)
    assert len(mats) == len(model.materials) == 31
    for mat, rec in zip(mats, model.materials, strict=True):
        shader = mat.node_tree.nodes[mmdmat.SHADER_NODE]
        i = shader.inputs
        assert _f32([*i["Diffuse Color"].default_value[:3], i["Alpha"].default_value]).tobytes() == \
            _f32(rec.diffuse).tobytes(), mat.name
        assert _f32(i["Ambient Color"].default_value[:3]).tobytes() == _f32(rec.ambient).tobytes()
        assert _f32(i["Specular Color"].default_value[:3]).tobytes() == _f32(rec.specular).tobytes()
        assert _f32(i["Specular Power"].default_value).tobytes() == _f32(rec.specular_power).tobytes()
        assert _f32(mat.diffuse_color).tobytes() == _f32(rec.diffuse).tobytes(), mat.name
        output = next(n for n in mat.node_tree.nodes if n.type == "OUTPUT_MATERIAL" and n.is_active_output)
        assert _source(output.inputs["Surface"]) == (shader, "Shader")
        # Luka's texture files are not in the folder: no image feeds the MMD shading (its inputs stay neutral)
        assert not any(s.is_linked for s in i), mat.name


def _png(path, rgb, rows=1):
    pixels = np.zeros((rows, 1, 4), np.uint8)
    pixels[...] = 255
    pixels[:, 0, :3] = np.asarray(rgb, np.uint8).reshape(-1, 3)
    path.write_bytes(encode_png(pixels))


SPHERE_ADD_TEX, SPHERE_MUL_TEX, BASE_TEX = (40, 60, 80), (230, 200, 160), (250, 220, 200)
TOON_TOP, TOON_BOTTOM = (255, 255, 255), (200, 150, 120)


@pytest.fixture
def textured(clean_scene, testdata, tmp_path):
    """Luka in tmp_path with a file for every texture (uniform colours; the toon: its top half white, its
    bottom half TOON_BOTTOM, 16 rows, so that a sample a sixth away from the middle meets one colour), material
    29 switched to the sub-texture sphere mode with a toon file and material 0 given a toon file too; material 1
    keeps its additive sphere, material 3 its multiplying one."""
    model = pmx.read_file(testdata / "pmx" / LUKA)
    colours = {"a2.spa": SPHERE_ADD_TEX, "a3.spa": SPHERE_ADD_TEX, "a1.sph": SPHERE_MUL_TEX,
               "a4.sph": SPHERE_MUL_TEX, "metal.sph": SPHERE_MUL_TEX, "eyelu.bmp": BASE_TEX}
    for name in model.textures:
        if name == "ao.bmp":
            _png(tmp_path / name, [TOON_TOP] * 8 + [TOON_BOTTOM] * 8, rows=16)  # the first row is the top
        else:
            _png(tmp_path / name, colours[name])
    toon = model.textures.index("ao.bmp")
    m29 = model.materials[29]
    m29.sphere_mode, m29.shared_toon, m29.toon = 3, 0, toon
    model.materials[0].shared_toon, model.materials[0].toon = 0, toon
    path = tmp_path / "luka.pmx"
    path.write_bytes(pmx.write(model))
    return path, model


def test_sphere_toon_and_base_images_are_wired_by_the_record(textured, tmp_path):
    path, model = textured
    _, mats = _import(path)
    seen = set()
    for mat, rec in zip(mats, model.materials, strict=True):
        nodes = mat.node_tree.nodes
        i = nodes[mmdmat.SHADER_NODE].inputs
        file_of = {n: bpy.path.abspath(n.image.filepath) for n in nodes if n.type == "TEX_IMAGE"}
        if 0 <= rec.texture:
            node, out = _source(i["Base Tex"])
            assert (file_of[node], out) == (str(tmp_path / model.textures[rec.texture]), "Color")
            assert _source(i["Base Alpha"]) == (node, "Alpha")
        else:
            assert not i["Base Tex"].is_linked
        sphere_in = {1: "Sphere Multiply", 2: "Sphere Add", 3: "Sphere Multiply"}.get(rec.sphere_mode)
        for name in ("Sphere Multiply", "Sphere Add"):
            assert i[name].is_linked == (name == sphere_in and rec.sphere_texture >= 0), (mat.name, name)
        if sphere_in and rec.sphere_texture >= 0:
            node, _ = _source(i[sphere_in])
            assert file_of[node] == str(tmp_path / model.textures[rec.sphere_texture])
            coords, uv = _source(node.inputs["Vector"])
            assert coords.name == mmdmat.COORDS_NODE
            assert uv == ("Sub-texture UV" if rec.sphere_mode == 3 else "Sphere UV")
            seen.add(rec.sphere_mode)
        if rec.shared_toon == 0 and rec.toon >= 0:
            node, _ = _source(i["Toon Tex"])
            assert file_of[node] == str(tmp_path / "ao.bmp") and node.extension == "EXTEND"
            assert _source(node.inputs["Vector"])[1] == "Toon UV"
            seen.add("toon")
        else:  # MMD's shared toons (toon01..10.bmp) are not files of the model
            assert not i["Toon Tex"].is_linked
    assert seen == {1, 2, 3, "toon"}


def _srgb_to_linear(c):
    c = np.asarray(c, np.float64)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def _linear_to_srgb(c):
    c = np.clip(np.asarray(c, np.float64), 0, 1)
    return np.where(c <= 0.0031308, c * 12.92, 1.055 * c ** (1 / 2.4) - 0.055)


def _mmd_colour(rec, normal, tex=(255, 255, 255), sph_mul=(255, 255, 255), sph_add=(0, 0, 0), toon=None):
    """MMD's default shader for a flat face with world normal `normal` seen by an orthographic camera looking
    along +Y (display values): saturate(ambient + diffuse × light) × texture, sphere × or +, × toon at
    v = 1/2 + N·L / 2 (top row above 1/2), + specular × light × max(0, N·H)^power."""
    n = np.asarray(normal, np.float64)
    colour = np.clip(np.asarray(rec.ambient, np.float64) + np.asarray(rec.diffuse[:3], np.float64) * LIGHT, 0, 1)
    colour = colour * np.asarray(tex) / 255 * np.asarray(sph_mul) / 255 + np.asarray(sph_add) / 255
    if toon is not None:
        colour = colour * np.asarray(toon[0] if 0.5 + 0.5 * n @ TO_LIGHT > 0.5 else toon[1]) / 255
    half = np.array([0.0, -1.0, 0.0]) + TO_LIGHT
    half /= np.linalg.norm(half)
    colour = colour + np.asarray(rec.specular, np.float64) * LIGHT * max(0.0, n @ half) ** float(rec.specular_power)
    return np.clip(colour, 0, 1)


def _render(width: int, height: int) -> np.ndarray:
    """The scene rendered at width × height, as 8-bit PNG values in 0..1 (rows from the bottom)."""
    sc = bpy.context.scene
    sc.render.resolution_x, sc.render.resolution_y = width, height
    sc.render.resolution_percentage = 100
    sc.render.filepath = ""
    sc.view_settings.view_transform = "Standard"
    sc.view_settings.look = "None"
    sc.render.dither_intensity = 0.0
    bpy.ops.render.render()
    img = bpy.data.images["Render Result"]
    path = bpy.app.tempdir + "mmd_material_render.png"
    img.save_render(path)
    out = bpy.data.images.load(path)
    px = np.empty(out.size[0] * out.size[1] * 4, np.float32)
    out.pixels.foreach_get(px)
    bpy.data.images.remove(out)
    return px.reshape(height, width, 4)


def _camera(centre, scale):
    sc = bpy.context.scene
    cam = bpy.data.objects.new("camera", bpy.data.cameras.new("camera"))
    sc.collection.objects.link(cam)
    sc.camera = cam
    cam.data.type = "ORTHO"
    cam.data.ortho_scale = scale
    cam.location = (centre[0], centre[1] - 10.0, centre[2])
    cam.rotation_euler = (np.pi / 2, 0, 0)  # looking along +Y, Z up
    bpy.context.view_layer.update()
    return cam


@pytest.mark.default_leg
def test_cycles_shows_mmds_colours(textured):
    path, model = textured
    mesh, mats = _import(path)
    mesh.hide_render = True
    for ob in bpy.data.objects:
        if ob.type != "MESH":
            ob.hide_render = True
    # (material, plane normal, what MMD multiplies/adds): a multiplying sphere, an additive one, a texture with
    # the sub-texture sphere and a toon lit from the front (top row), material 0's toon on a face turned away
    cases = [(3, (0, -1, 0), {"sph_mul": SPHERE_MUL_TEX}), (1, (0, -1, 0), {"sph_add": SPHERE_ADD_TEX}),
             (29, (0, -1, 0), {"tex": BASE_TEX, "sph_mul": SPHERE_MUL_TEX, "toon": (TOON_TOP, TOON_BOTTOM)}),
             (0, (0, -0.6, -0.8), {"toon": (TOON_TOP, TOON_BOTTOM)})]  # faces the camera, not the light
    for k, (m, normal, _) in enumerate(cases):
        me = bpy.data.meshes.new(f"plane{k}")
        n = np.asarray(normal, np.float64)
        t1 = np.cross(n, (1.0, 0.0, 0.0)) if abs(n[0]) < 0.9 else np.cross(n, (0.0, 0.0, 1.0))
        t1 /= np.linalg.norm(t1)
        t2 = np.cross(n, t1)
        centre = np.array([2.0 * k + 0.5, 0.0, 0.5])
        verts = [tuple(centre + a * t1 / 2 + b * t2 / 2) for a, b in ((-1, -1), (1, -1), (1, 1), (-1, 1))]
        me.from_pydata(verts, [], [(0, 1, 2, 3)])
        me.uv_layers.new()
        me.materials.append(mats[m])
        ob = bpy.data.objects.new(f"plane{k}", me)
        bpy.context.scene.collection.objects.link(ob)
        assert np.allclose(np.array(me.polygons[0].normal), normal, atol=1e-6)
    _camera((3.5, 0, 0.5), 8.0)
    sc = bpy.context.scene
    sc.render.engine = "CYCLES"
    sc.cycles.samples = 1
    sc.cycles.use_denoising = False
    sc.world = None
    px = _render(64, 64)  # 8 pixels a unit: plane k covers columns 16k+4 .. 16k+12, rows 28 .. 36
    for k, (m, normal, kw) in enumerate(cases):
        got = px[32, 16 * k + 8, :3]
        want = _mmd_colour(model.materials[m], normal, **kw)
        assert np.abs(got - want).max() <= 1 / 255, (k, got, want)  # an 8-bit PNG, no dither


def _workbench_pixels_of(mesh, materials, size_x, size_y, cam):
    """For each material: pixels (row from the bottom, column) near the centres of its triangles that face the
    camera, where rays from the camera through the pixel's centre and four points 0.4 pixel around it all meet
    that material first."""
    from bpy_extras.object_utils import world_to_camera_view

    sc = bpy.context.scene
    dg = bpy.context.evaluated_depsgraph_get()
    me = mesh.data
    me.calc_loop_triangles()
    pixel = cam.data.ortho_scale / max(size_x, size_y)
    out = {}

    def first_material(x, z):
        hit, _, _, index, ob, _ = sc.ray_cast(dg, Vector((x, cam.location.y, z)), Vector((0, 1, 0)))
        return me.polygons[index].material_index if hit and ob.name == mesh.name else None

    for tri in me.loop_triangles:
        m = tri.material_index
        if m not in materials or len(out.get(m, [])) >= 20 or tri.area < 2e-4 or tri.normal[1] > -0.5:
            continue
        uvw = world_to_camera_view(sc, cam, mesh.matrix_world @ tri.center)
        row, col = int(uvw.y * size_y), int(uvw.x * size_x)
        if not (0 <= row < size_y and 0 <= col < size_x):  # outside the frame (the hands)
            continue
        x = cam.location.x + (col + 0.5 - size_x / 2) * pixel
        z = cam.location.z + (row + 0.5 - size_y / 2) * pixel
        around = ((0, 0), (0.4, 0), (-0.4, 0), (0, 0.4), (0, -0.4))
        if all(first_material(x + dx * pixel, z + dz * pixel) == m for dx, dz in around):
            out.setdefault(m, []).append((row, col))
    return out


@pytest.mark.default_leg
def test_workbench_render_of_luka_shows_the_diffuse_colours(clean_scene, testdata):
    path = testdata / "pmx" / LUKA
    model = pmx.read_file(path)
    mesh, _ = _import(path)
    corners = np.array([mesh.matrix_world @ Vector(c) for c in mesh.bound_box])
    lo, hi = corners.min(0), corners.max(0)
    cam = _camera((lo + hi) / 2, float(hi[2] - lo[2]) * 1.05)
    sc = bpy.context.scene
    sc.render.engine = "BLENDER_WORKBENCH"
    sc.display.shading.light = "FLAT"
    sc.display.shading.color_type = "MATERIAL"
    sc.display.render_aa = "OFF"
    size = 200, 400  # the camera frames the model's height in 400 pixels
    px = _render(*size)
    wanted = {k for k, m in enumerate(model.materials) if m.diffuse[3] == 1}  # the opaque ones
    found = _workbench_pixels_of(mesh, wanted, *size, cam)
    checked = 0
    for m, places in found.items():
        want = _linear_to_srgb(model.materials[m].diffuse[:3])  # Workbench shows the colour as scene-linear
        for row, col in places:
            got = px[row, col, :3]
            assert np.abs(got - want).max() <= 2 / 255, (model.materials[m].name, row, col, got, want)
            checked += 1
    assert len(found) >= 8 and checked >= 100, {m: len(p) for m, p in found.items()}


def test_an_edit_on_the_mmd_shader_reaches_the_file(clean_scene, testdata, tmp_path):
    path = testdata / "pmx" / LUKA
    model = pmx.read_file(path)
    _, mats = _import(path)
    i = mats[3].node_tree.nodes[mmdmat.SHADER_NODE].inputs
    i["Diffuse Color"].default_value = (0.25, 0.5, 0.75, 1.0)
    i["Alpha"].default_value = 0.5
    i["Ambient Color"].default_value = (0.125, 0.25, 0.375, 1.0)
    i["Specular Color"].default_value = (0.5, 0.625, 0.75, 1.0)
    i["Specular Power"].default_value = 42.0
    bsdf = next(n for n in mats[7].node_tree.nodes if n.type == "BSDF_PRINCIPLED")  # the BSDF: as before
    bsdf.inputs["Base Color"].default_value = (0.0, 0.5, 1.0, 1.0)
    out = _export(tmp_path)
    m3, m7 = out.materials[3], out.materials[7]
    assert _f32(m3.diffuse).tolist() == [0.25, 0.5, 0.75, 0.5]
    assert _f32(m3.ambient).tolist() == [0.125, 0.25, 0.375]
    assert _f32(m3.specular).tolist() == [0.5, 0.625, 0.75] and float(m3.specular_power) == 42.0
    assert _f32(m7.diffuse).tolist() == [0.0, 0.5, 1.0, float(model.materials[7].diffuse[3])]
    for k, (a, b) in enumerate(zip(out.materials, model.materials)):
        if k not in (3, 7):
            for f, _, _ in pmx.MATERIAL_HEAD:
                assert np.asarray(getattr(a, f)).tobytes() == np.asarray(getattr(b, f)).tobytes(), (k, f)


def test_export_with_textures_writes_the_sphere_and_toon_images(textured, tmp_path):
    from skinbridge.io_pmx.blender_side import blender_io

    path, model = textured
    _import(path)
    outdir = tmp_path / "out"
    outdir.mkdir()
    blender_io.export_model(bpy.context, str(outdir / "x.pmx"), textures=True)
    out = pmx.read_file(outdir / "x.pmx")
    assert len(out.textures) == len(model.textures) == 7
    for k, (mat, rec) in enumerate(zip(out.materials, model.materials)):
        assert (mat.texture, mat.sphere_texture, mat.shared_toon, mat.toon) == \
            (rec.texture, rec.sphere_texture, rec.shared_toon, rec.toon), k
    for name in out.textures:  # every image (each a PNG here) beside the PMX, as the table names it
        data = (outdir / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n", name
