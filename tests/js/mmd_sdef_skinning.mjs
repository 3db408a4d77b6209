// Pose a PMX by a VMD in babylon-mmd's MMD runtime (MmdRuntime on @babylonjs/core's NullEngine, physics off) and
// print, for every mesh the loader made, its rest positions, its linear blend skinning
// (`getPositionData(true, true)`) and babylon-mmd's SDEF CPU skinning (`SdefMesh.applySkeleton`, the loader's
// default `useSdef`), all in MMD units, one frame.
// usage: node mmd_sdef_skinning.mjs NODE_MODULES_DIR MODEL.pmx MOTION.vmd FRAME
import fs from "node:fs";
import path from "node:path";
import { register } from "node:module";
import { pathToFileURL } from "node:url";

register("./runtime_hook.mjs", import.meta.url);

const [nodeModules, modelPath, motionPath, frame] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(path.join(nodeModules, p)).href);
const { NullEngine } = await load("@babylonjs/core/Engines/nullEngine.js");
const { Scene } = await load("@babylonjs/core/scene.js");
const { VertexBuffer } = await load("@babylonjs/core/Buffers/buffer.js");
const { LoadAssetContainerAsync } = await load("@babylonjs/core/Loading/sceneLoader.js");
await load("babylon-mmd/esm/Loader/pmxLoader.js");
const { VmdLoader } = await load("babylon-mmd/esm/Loader/vmdLoader.js");
const { VmdObject } = await load("babylon-mmd/esm/Loader/Parser/vmdObject.js");
const { MmdRuntime } = await load("babylon-mmd/esm/Runtime/mmdRuntime.js");
await load("babylon-mmd/esm/Runtime/Animation/mmdRuntimeModelAnimation.js");

const engine = new NullEngine();
const scene = new Scene(engine);
const bytes = fs.readFileSync(modelPath);
const container = await LoadAssetContainerAsync(new Uint8Array(bytes), scene, {
  pluginExtension: ".pmx",
  pluginOptions: { mmdmodel: { materialBuilder: null, loggingEnabled: false } },
});
container.addAllToScene();
const root = container.meshes[0];
const runtime = new MmdRuntime(scene, null);  // no physics
const model = runtime.createMmdModel(root);
const vmdBytes = fs.readFileSync(motionPath);
const vmdObject = VmdObject.ParseFromBuffer(vmdBytes.buffer.slice(vmdBytes.byteOffset, vmdBytes.byteOffset + vmdBytes.byteLength));
const animation = await new VmdLoader(scene).loadFromVmdObjectAsync("motion", vmdObject);
model.setRuntimeAnimation(model.createRuntimeAnimation(animation));
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
