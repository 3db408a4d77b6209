// Play a PMX + VMD in babylon-mmd's MMD runtime (MmdRuntime on @babylonjs/core's NullEngine, IK on, physics
// off) and print the world positions of the named bones at the given frames, one seekAnimation per frame.
// usage: node mmd_runtime_pose.mjs NODE_MODULES_DIR MODEL.pmx MOTION.vmd FRAMES_JSON BONES_JSON
import { register } from "node:module";

import { runtimeWithMotion } from "./mmd_runtime_model.mjs";

register("./runtime_hook.mjs", import.meta.url);

const [nodeModules, modelPath, motionPath, framesJson, bonesJson] = process.argv.slice(2);
const { engine, model, runtime } = await runtimeWithMotion(nodeModules, modelPath, motionPath);

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
