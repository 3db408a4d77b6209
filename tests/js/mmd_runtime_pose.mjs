// Play a PMX + VMD in babylon-mmd's MMD runtime (MmdRuntime on @babylonjs/core's NullEngine, IK on, physics
// off) and print the world positions of the named bones at the given frames, one seekAnimation per frame.
// usage: node mmd_runtime_pose.mjs NODE_MODULES_DIR MODEL.pmx MOTION.vmd FRAMES_JSON BONES_JSON
import fs from "node:fs";
import path from "node:path";
import { register } from "node:module";
import { pathToFileURL } from "node:url";

register("./runtime_hook.mjs", import.meta.url);

const [nodeModules, modelPath, motionPath, framesJson, bonesJson] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(path.join(nodeModules, p)).href);
const { NullEngine } = await load("@babylonjs/core/Engines/nullEngine.js");
const { Scene } = await load("@babylonjs/core/scene.js");
const { LoadAssetContainerAsync } = await load("@babylonjs/core/Loading/sceneLoader.js");
await load("babylon-mmd/esm/Loader/pmxLoader.js");
const { VmdLoader } = await load("babylon-mmd/esm/Loader/vmdLoader.js");
const { VmdObject } = await load("babylon-mmd/esm/Loader/Parser/vmdObject.js");
const { MmdRuntime } = await load("babylon-mmd/esm/Runtime/mmdRuntime.js");
await load("babylon-mmd/esm/Runtime/Animation/mmdRuntimeModelAnimation.js");

const quiet = { log() {}, warn() {}, error() {} };
const engine = new NullEngine();
const scene = new Scene(engine);
const bytes = fs.readFileSync(modelPath);
const container = await LoadAssetContainerAsync(new Uint8Array(bytes), scene, {
  pluginExtension: ".pmx",
  pluginOptions: { mmdmodel: { materialBuilder: null, loggingEnabled: false } },
});
container.addAllToScene();
const mesh = container.meshes[0];
const runtime = new MmdRuntime(scene, null);  // no physics
const model = runtime.createMmdModel(mesh);
const vmdBytes = fs.readFileSync(motionPath);
const vmdObject = VmdObject.ParseFromBuffer(vmdBytes.buffer.slice(vmdBytes.byteOffset, vmdBytes.byteOffset + vmdBytes.byteLength));
const animation = await new VmdLoader(scene).loadFromVmdObjectAsync("motion", vmdObject);
model.setRuntimeAnimation(model.createRuntimeAnimation(animation));

const frames = JSON.parse(framesJson);
const wanted = JSON.parse(bonesJson);
const bones = new Map(model.runtimeBones.map((b) => [b.name, b]));
const out = { frames: [], bones: wanted, missing: wanted.filter((n) => !bones.has(n)) };
for (const f of frames) {
  await runtime.seekAnimation(f, true);
  runtime.beforePhysics(0);
  runtime.afterPhysics();
  const row = [];
  for (const n of wanted) {
    const b = bones.get(n);
    if (!b) { row.push(null); continue; }
    const m = b.worldMatrix;  // Float32Array (16), column-major: translation at 12..14
    row.push([m[12], m[13], m[14]]);
  }
  out.frames.push(row);
}
process.stdout.write(JSON.stringify(out));
engine.dispose();
