// Play a PMX + VMD in babylon-mmd's MMD runtime (MmdRuntime on @babylonjs/core's NullEngine, IK on, physics
// off) and write the world matrix of every bone at the given (fractional) frames, one seekAnimation per frame.
// usage: node mmd_runtime_world.mjs NODE_MODULES_DIR MODEL.pmx MOTION.vmd FRAMES_JSON OUT.f64 [--exact-bezier]
// --exact-bezier: the curve weights solved to float64 precision (tests/js/exact_bezier_hook.mjs).
// OUT.f64: float64 little-endian, frames × bones × 16 (each babylon world matrix as stored: row-vector
// convention, translation at 12..14); stdout: {"bones": [names in the model's order]}.
import fs from "node:fs";
import { register } from "node:module";

import { runtimeWithMotion } from "./mmd_runtime_model.mjs";

const [nodeModules, modelPath, motionPath, framesJson, outPath, option] = process.argv.slice(2);
register("./runtime_hook.mjs", import.meta.url);
if (option === "--exact-bezier") register("./exact_bezier_hook.mjs", import.meta.url);
const { engine, model, runtime } = await runtimeWithMotion(nodeModules, modelPath, motionPath);

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
