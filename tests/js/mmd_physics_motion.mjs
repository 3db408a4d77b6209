// Play a PMX + VMD in babylon-mmd's MMD physics (MmdRuntime with MmdAmmoPhysics, the ammo.js wasm it ships, on
// @babylonjs/core's NullEngine) with a fixed 1/60 s step, as MMD plays a motion: each step moves the animation
// 1/60 s on (beforePhysics), then one Bullet step of 1/60 s, then afterPhysics; prints the world matrices of the
// named bones after each requested number of steps (two steps a 30 fps frame).
// usage: node mmd_physics_motion.mjs NODE_MODULES_DIR MODEL.pmx MOTION.vmd STEPS_JSON BONES_JSON [GRAVITY]
import fs from "node:fs";
import path from "node:path";
import { createRequire, register } from "node:module";
import { pathToFileURL } from "node:url";

register("./runtime_hook.mjs", import.meta.url);

const [nodeModules, modelPath, motionPath, stepsJson, bonesJson, gravityArg] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(path.join(nodeModules, p)).href);
const physicsDir = path.join(nodeModules, "babylon-mmd/esm/Runtime/Physics/External");
// ammo.wasm.js is an ES module that still calls require("fs") and reads __dirname when it sees node; it only
// needs them to fetch its wasm, which instantiateWasm below hands it instead.
globalThis.require = createRequire(import.meta.url);
globalThis.__dirname = physicsDir;
const { default: ammoFactory } = await import(pathToFileURL(path.join(physicsDir, "ammo.wasm.js")).href);
const wasm = fs.readFileSync(path.join(physicsDir, "ammo.wasm.wasm"));
const ammo = await ammoFactory({
  instantiateWasm(imports, done) {
    WebAssembly.instantiate(wasm, imports).then((r) => done(r.instance, r.module));
    return {};
  },
});

const { NullEngine } = await load("@babylonjs/core/Engines/nullEngine.js");
const { Scene } = await load("@babylonjs/core/scene.js");
const { Vector3 } = await load("@babylonjs/core/Maths/math.vector.js");
await load("@babylonjs/core/Physics/joinedPhysicsEngineComponent.js");  // scene.enablePhysics
await load("@babylonjs/core/Physics/v1/physicsEngineComponent.js");  // meshes' physicsImpostor
const { LoadAssetContainerAsync } = await load("@babylonjs/core/Loading/sceneLoader.js");
await load("babylon-mmd/esm/Loader/pmxLoader.js");
const { MmdRuntime } = await load("babylon-mmd/esm/Runtime/mmdRuntime.js");
const { VmdLoader } = await load("babylon-mmd/esm/Loader/vmdLoader.js");
const { VmdObject } = await load("babylon-mmd/esm/Loader/Parser/vmdObject.js");
await load("babylon-mmd/esm/Runtime/Animation/mmdRuntimeModelAnimation.js");
const { MmdAmmoJSPlugin } = await load("babylon-mmd/esm/Runtime/Physics/mmdAmmoJSPlugin.js");
const { MmdAmmoPhysics } = await load("babylon-mmd/esm/Runtime/Physics/mmdAmmoPhysics.js");

const engine = new NullEngine();
const scene = new Scene(engine);
const plugin = new MmdAmmoJSPlugin(false, ammo);  // false: every step is the fixed 1/60 s, not the frame's delta
scene.enablePhysics(new Vector3(0, -Number(gravityArg ?? 98), 0), plugin);
const bytes = fs.readFileSync(modelPath);
const container = await LoadAssetContainerAsync(new Uint8Array(bytes), scene, {
  pluginExtension: ".pmx",
  pluginOptions: { mmdmodel: { materialBuilder: null, loggingEnabled: false } },
});
container.addAllToScene();
const runtime = new MmdRuntime(scene, new MmdAmmoPhysics(scene));
const model = runtime.createMmdModel(container.meshes[0]);
const vmdBytes = fs.readFileSync(motionPath);
const vmdObject = VmdObject.ParseFromBuffer(vmdBytes.buffer.slice(vmdBytes.byteOffset,
  vmdBytes.byteOffset + vmdBytes.byteLength));
const animation = await new VmdLoader(scene).loadFromVmdObjectAsync("motion", vmdObject);
model.setRuntimeAnimation(model.createRuntimeAnimation(animation));

const checkpoints = JSON.parse(stepsJson);
const wanted = JSON.parse(bonesJson);
const bones = new Map(model.runtimeBones.map((b) => [b.name, b]));
const out = { steps: [], bones: wanted, missing: wanted.filter((n) => !bones.has(n)), frames: [] };
const snapshot = () => wanted.map((n) => (bones.has(n) ? Array.from(bones.get(n).worldMatrix) : null));
const last = Math.max(0, ...checkpoints);
await runtime.seekAnimation(0, true);
runtime.beforePhysics(0);
runtime.afterPhysics();
if (checkpoints.includes(0)) {
  out.steps.push(0);
  out.frames.push(snapshot());
}
await runtime.playAnimation();
for (let step = 1; step <= last; ++step) {
  runtime.beforePhysics(1000 / 60);  // the animation 1/60 s on (half a 30 fps frame)
  scene._advancePhysicsEngineStep(1000 / 60);
  runtime.afterPhysics();
  if (checkpoints.includes(step)) {
    out.steps.push(step);
    out.frames.push(snapshot());
  }
}
out.frameTime = runtime.currentFrameTime;
process.stdout.write(JSON.stringify(out));
engine.dispose();
