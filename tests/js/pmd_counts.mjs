// Parse PMD files with babylon-mmd's PmdReader (which returns its PMX form) and print what it saw as one JSON
// object per file, with each bone's rest position (the PMD's absolute bone positions).
// usage: node pmd_counts.mjs NODE_MODULES_DIR FILE...
import path from "node:path";
import { register } from "node:module";
import { pathToFileURL } from "node:url";

import { printEach } from "./each_file.mjs";

register("./ext_hook.mjs", import.meta.url);

const [nodeModules, ...files] = process.argv.slice(2);
const readerPath = path.join(nodeModules, "babylon-mmd", "esm", "Loader", "Parser", "pmdReader.js");
const { PmdReader } = await import(pathToFileURL(readerPath).href);

await printEach(files, async (ab, logger) => {
  const o = await PmdReader.ParseAsync(ab, logger);
  return {
    vertices: o.vertices.length,
    indices: o.indices.length,
    materials: o.materials.length,
    textures: o.textures,
    bones: o.bones.length,
    morphs: o.morphs.length,
    rigidBodies: o.rigidBodies.length,
    joints: o.joints.length,
    boneNames: o.bones.map((b) => b.name),
    bonePositions: o.bones.map((b) => Array.from(b.position)),
    boneParents: o.bones.map((b) => b.parentBoneIndex),
    morphVertices: o.morphs.map((m) => Array.from(m.indices)),
    toons: o.materials.map((m) => [m.isSharedToonTexture, m.toonTextureIndex]),
    bodyPositions: o.rigidBodies.map((b) => Array.from(b.shapePosition)),
    ik: o.bones.filter((b) => b.ik).map((b) => ({
      bone: b.name,
      target: b.ik.target,
      iteration: b.ik.iteration,
      links: b.ik.links.map((l) => ({
        bone: l.target,
        lower: l.limitation ? Array.from(l.limitation.minimumAngle) : null,
        upper: l.limitation ? Array.from(l.limitation.maximumAngle) : null,
      })),
    })),
  };
});
