// Play a PMX + VMD in babylon-mmd's MMD physics (MmdRuntime with MmdAmmoPhysics, the ammo.js wasm it ships, on
// @babylonjs/core's NullEngine) with a fixed 1/60 s step, as MMD plays a motion: each step moves the animation
// 1/60 s on (beforePhysics), then one Bullet step of 1/60 s, then afterPhysics; prints the world matrices of the
// named bones after each requested number of steps (two steps a 30 fps frame).
// usage: node mmd_physics_motion.mjs NODE_MODULES_DIR MODEL.pmx MOTION.vmd STEPS_JSON BONES_JSON [GRAVITY]
import fs from "node:fs";
import { register } from "node:module";

import { ammoModel } from "./mmd_ammo_model.mjs";

register("./runtime_hook.mjs", import.meta.url);

const [nodeModules, modelPath, motionPath, stepsJson, bonesJson, gravityArg] = process.argv.slice(2);
const { load, engine, scene, runtime, model } = await ammoModel(nodeModules, modelPath, Number(gravityArg ?? 98));
const { VmdLoader } = await load("babylon-mmd/esm/Loader/vmdLoader.js");
const { VmdObject } = await load("babylon-mmd/esm/Loader/Parser/vmdObject.js");
await load("babylon-mmd/esm/Runtime/Animation/mmdRuntimeModelAnimation.js");
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
