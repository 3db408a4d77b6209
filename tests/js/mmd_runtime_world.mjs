// Play a PMX + VMD in babylon-mmd's MMD runtime (MmdRuntime on @babylonjs/core's NullEngine, IK on, physics
// off) and write the world matrix of every bone at the given (fractional) frames, one seekAnimation per frame.
// usage: node mmd_runtime_world.mjs NODE_MODULES_DIR MODEL.pmx MOTION.vmd FRAMES_JSON OUT.f64 [--exact-bezier]
// --exact-bezier: the curve weights solved to float64 precision (tests/js/exact_bezier_hook.mjs).
// OUT.f64: float64 little-endian, frames × bones × 16 (each babylon world matrix as stored: row-vector
// convention, translation at 12..14); stdout: {"bones": [names in the model's order]}.
import fs from "node:fs";
import path from "node:path";
import { register } from "node:module";
import { pathToFileURL } from "node:url";

const [nodeModules, modelPath, motionPath, framesJson, outPath, option] = process.argv.slice(2);
register("./runtime_hook.mjs", import.meta.url);
if (option === "--exact-bezier") register("./exact_bezier_hook.mjs", import.meta.url);
const load = (p) => import(pathToFileURL(path.join(nodeModules, p)).href);
const { NullEngine } = await load("@babylonjs/core/Engines/nullEngine.js");
const { Scene } = await load("@babylonjs/core/scene.js");
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
const mesh = container.meshes[0];
const runtime = new MmdRuntime(scene, null);  // no physics
const model = runtime.createMmdModel(mesh);
const vmdBytes = fs.readFileSync(motionPath);
const vmdObject = VmdObject.ParseFromBuffer(vmdBytes.buffer.slice(vmdBytes.byteOffset, vmdBytes.byteOffset + vmdBytes.byteLength));
const animation = await new VmdLoader(scene).loadFromVmdObjectAsync("motion", vmdObject);
model.setRuntimeAnimation(model.createRuntimeAnimation(animation));

const frames = JSON.parse(framesJson);
const bones = model.runtimeBones;
const out = new Float64Array(frames.length * bones.length * 16);
let at = 0;
for (const f of frames) {
  await runtime.seekAnimation(f, true);
  runtime.beforePhysics(0);
  runtime.afterPhysics();
  for (const b of bones) {
    const m = b.worldMatrix;
    for (let k = 0; k < 16; k++) out[at++] = m[k];
  }
}
fs.writeFileSync(outPath, Buffer.from(out.buffer));
process.stdout.write(JSON.stringify({ bones: bones.map((b) => b.name) }));
engine.dispose();
