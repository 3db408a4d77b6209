// Parse PMX files with babylon-mmd's PmxReader and print what it saw as one JSON object per file.
// usage: node pmx_counts.mjs NODE_MODULES_DIR FILE...
import path from "node:path";
import { register } from "node:module";
import { pathToFileURL } from "node:url";

import { printEach } from "./each_file.mjs";

register("./ext_hook.mjs", import.meta.url);

const [nodeModules, ...files] = process.argv.slice(2);
const readerPath = path.join(nodeModules, "babylon-mmd", "esm", "Loader", "Parser", "pmxReader.js");
const { PmxReader } = await import(pathToFileURL(readerPath).href);

await printEach(files, async (ab, logger) => {
  const o = await PmxReader.ParseAsync(ab, logger);
  const deformTypes = [0, 0, 0, 0, 0];
  for (const v of o.vertices) deformTypes[v.weightType] += 1;
  return {
    version: o.header.version,
    encoding: o.header.encoding,
    additionalVec4Count: o.header.additionalVec4Count,
    vertices: o.vertices.length,
    indices: o.indices.length,
    textures: o.textures.length,
    materials: o.materials.length,
    bones: o.bones.length,
    morphs: o.morphs.length,
    displayFrames: o.displayFrames.length,
    rigidBodies: o.rigidBodies.length,
    joints: o.joints.length,
    softBodies: o.softBodies.length,
    deformTypes,
    morphTypes: o.morphs.map((m) => m.type),
    jointTypes: o.joints.map((j) => j.type),
    boneNames: o.bones.map((b) => b.name),
    boneFlags: o.bones.map((b) => b.flag),
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
    softBodyAnchors: o.softBodies.map((s) => s.anchors.length),
    softBodyPins: o.softBodies.map((s) => s.vertexPins.length),
  };
});
