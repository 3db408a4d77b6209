// Settle a PMX under gravity in babylon-mmd's MMD physics (MmdRuntime with MmdAmmoPhysics, the ammo.js wasm it
// ships, on @babylonjs/core's NullEngine) with a fixed 1/60 s step, no animation, and print the world matrices of
// the named bones after each requested number of steps. The script steps the world itself (the wall clock plays
// no part): beforePhysics, one Bullet step of 1/60 s, afterPhysics.
// usage: node mmd_physics_settle.mjs NODE_MODULES_DIR MODEL.pmx STEPS_JSON BONES_JSON [GRAVITY]
import { register } from "node:module";

import { ammoModel } from "./mmd_ammo_model.mjs";

register("./runtime_hook.mjs", import.meta.url);

const [nodeModules, modelPath, stepsJson, bonesJson, gravityArg] = process.argv.slice(2);
const { engine, scene, runtime, model } = await ammoModel(nodeModules, modelPath, Number(gravityArg ?? 98));

const checkpoints = JSON.parse(stepsJson);
const wanted = JSON.parse(bonesJson);
const bones = new Map(model.runtimeBones.map((b) => [b.name, b]));
const out = { steps: [], bones: wanted, missing: wanted.filter((n) => !bones.has(n)), frames: [] };
const snapshot = () => wanted.map((n) => (bones.has(n) ? Array.from(bones.get(n).worldMatrix) : null));
const last = Math.max(0, ...checkpoints);
if (checkpoints.includes(0)) {
  runtime.beforePhysics(0);
  runtime.afterPhysics();
  out.steps.push(0);
  out.frames.push(snapshot());
}
for (let step = 1; step <= last; ++step) {
  runtime.beforePhysics(1000 / 60);
  scene._advancePhysicsEngineStep(1000 / 60);
  runtime.afterPhysics();
  if (checkpoints.includes(step)) {
    out.steps.push(step);
    out.frames.push(snapshot());
  }
}
process.stdout.write(JSON.stringify(out));
engine.dispose();
