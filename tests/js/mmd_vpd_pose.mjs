// Apply a VPD pose in babylon-mmd's MMD runtime (its VpdLoader; MmdRuntime on @babylonjs/core's NullEngine, IK on,
// physics off) and print what VpdLoader read (bone names, positions, rotations, morph weights) and the world
// positions of the named bones in the posed model.
// usage: node mmd_vpd_pose.mjs NODE_MODULES_DIR MODEL.pmx POSE.vpd BONES_JSON
import fs from "node:fs";
import path from "node:path";
import { register } from "node:module";
import { pathToFileURL } from "node:url";

register("./runtime_hook.mjs", import.meta.url);

const [nodeModules, modelPath, posePath, bonesJson] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(path.join(nodeModules, p)).href);
const { NullEngine } = await load("@babylonjs/core/Engines/nullEngine.js");
const { Scene } = await load("@babylonjs/core/scene.js");
const { LoadAssetContainerAsync } = await load("@babylonjs/core/Loading/sceneLoader.js");
await load("babylon-mmd/esm/Loader/pmxLoader.js");
const { VpdLoader } = await load("babylon-mmd/esm/Loader/vpdLoader.js");
const { MmdRuntime } = await load("babylon-mmd/esm/Runtime/mmdRuntime.js");
await load("babylon-mmd/esm/Runtime/Animation/mmdRuntimeModelAnimation.js");

const engine = new NullEngine();
const scene = new Scene(engine);
const container = await LoadAssetContainerAsync(new Uint8Array(fs.readFileSync(modelPath)), scene, {
  pluginExtension: ".pmx",
  pluginOptions: { mmdmodel: { materialBuilder: null, loggingEnabled: false } },
});
container.addAllToScene();
const runtime = new MmdRuntime(scene, null);  // no physics
const model = runtime.createMmdModel(container.meshes[0]);
const bytes = fs.readFileSync(posePath);
const animation = new VpdLoader(scene).loadFromBuffer("pose",
  bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
model.setRuntimeAnimation(model.createRuntimeAnimation(animation));
await runtime.seekAnimation(0, true);
runtime.beforePhysics(0);
runtime.afterPhysics();

const read = { bones: {}, morphs: {} };
for (const t of animation.boneTracks) read.bones[t.name] = [[0, 0, 0], Array.from(t.rotations)];
for (const t of animation.movableBoneTracks) read.bones[t.name] = [Array.from(t.positions), Array.from(t.rotations)];
for (const t of animation.morphTracks) read.morphs[t.name] = t.weights[0];
const wanted = JSON.parse(bonesJson);
const bones = new Map(model.runtimeBones.map((b) => [b.name, b]));
const positions = wanted.map((n) => {
  const b = bones.get(n);
  if (!b) return null;
  const m = b.worldMatrix;  // Float32Array (16), column-major: translation at 12..14
  return [m[12], m[13], m[14]];
});
process.stdout.write(JSON.stringify({ read, positions, missing: wanted.filter((n) => !bones.has(n)) }));
engine.dispose();
