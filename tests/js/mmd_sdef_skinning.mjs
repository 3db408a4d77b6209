// Pose a PMX by a VMD in babylon-mmd's MMD runtime (MmdRuntime on @babylonjs/core's NullEngine, physics off) and
// print, for every mesh the loader made, its rest positions, its linear blend skinning
// (`getPositionData(true, true)`) and babylon-mmd's SDEF CPU skinning (`SdefMesh.applySkeleton`, the loader's
// default `useSdef`), all in MMD units, one frame.
// usage: node mmd_sdef_skinning.mjs NODE_MODULES_DIR MODEL.pmx MOTION.vmd FRAME
import { register } from "node:module";

import { runtimeWithMotion } from "./mmd_runtime_model.mjs";

register("./runtime_hook.mjs", import.meta.url);

const [nodeModules, modelPath, motionPath, frame] = process.argv.slice(2);
const { load, engine, container, runtime } = await runtimeWithMotion(nodeModules, modelPath, motionPath);
const { VertexBuffer } = await load("@babylonjs/core/Buffers/buffer.js");
await runtime.seekAnimation(Number(frame), true);
runtime.beforePhysics(0);
runtime.afterPhysics();

const out = { meshes: [] };
for (const mesh of container.meshes) {
  if (!mesh.skeleton || !mesh.isVerticesDataPresent(VertexBuffer.PositionKind)) continue;
  mesh.skeleton.prepare(true);
  const rest = Array.from(mesh.getVerticesData(VertexBuffer.PositionKind));
  const linear = Array.from(mesh.getPositionData(true, true));
  mesh.applySkeleton(mesh.skeleton);  // SdefMesh: SDEF vertices by MMD's SDEF, the others linear
  const sdef = Array.from(mesh.getVerticesData(VertexBuffer.PositionKind));
  out.meshes.push({ name: mesh.name, kind: mesh.getClassName(), rest, linear, sdef });
}
process.stdout.write(JSON.stringify(out));
engine.dispose();
