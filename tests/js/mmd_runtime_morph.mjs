// Set morph weights in babylon-mmd's MMD runtime (MmdRuntime on @babylonjs/core's NullEngine, physics off) and
// write every vertex's deformed position as Babylon evaluates it on the CPU: mesh.getPositionData(applySkeleton,
// applyMorph) adds each morph target's delta times the influence the runtime gave it, then skins with the
// skeleton's matrices. The model loads as one mesh (optimizeSubmeshes off), so its vertices are the PMX's, in
// file order. One case after another, the weights of the previous case set back to 0.
// usage: node mmd_runtime_morph.mjs NODE_MODULES_DIR MODEL.pmx CASES_JSON OUT.f32
//   CASES_JSON: [{"morph name": weight, ...}, ...]; OUT.f32: cases × vertices × 3 little-endian float32 (MMD units)
// stdout: {"vertices": N, "missing": [names the model lacks], "influences": [[non-zero target influences], ...]}
import fs from "node:fs";
import path from "node:path";
import { register } from "node:module";
import { pathToFileURL } from "node:url";

register("./runtime_hook.mjs", import.meta.url);

const [nodeModules, modelPath, casesJson, outPath] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(path.join(nodeModules, p)).href);
const { NullEngine } = await load("@babylonjs/core/Engines/nullEngine.js");
const { Scene } = await load("@babylonjs/core/scene.js");
const { LoadAssetContainerAsync } = await load("@babylonjs/core/Loading/sceneLoader.js");
await load("babylon-mmd/esm/Loader/pmxLoader.js");
const { MmdRuntime } = await load("babylon-mmd/esm/Runtime/mmdRuntime.js");

const engine = new NullEngine();
const scene = new Scene(engine);
const bytes = fs.readFileSync(modelPath);
const container = await LoadAssetContainerAsync(new Uint8Array(bytes), scene, {
  pluginExtension: ".pmx",
  pluginOptions: { mmdmodel: { materialBuilder: null, loggingEnabled: false, optimizeSubmeshes: false } },
});
container.addAllToScene();
const mesh = container.meshes[0];
const runtime = new MmdRuntime(scene, null);  // no physics
const model = runtime.createMmdModel(mesh);

const cases = JSON.parse(casesJson);
const names = new Set(cases.flatMap((c) => Object.keys(c)));
const known = new Set(model.morph.morphs.map((m) => m.name));
const manager = mesh.morphTargetManager;
const vertices = mesh.getTotalVertices();
const out = new Float32Array(cases.length * vertices * 3);
const report = { vertices, missing: [...names].filter((n) => !known.has(n)), influences: [] };
let previous = {};
cases.forEach((weights, i) => {
  for (const n of Object.keys(previous)) model.morph.setMorphWeight(n, 0);
  for (const [n, w] of Object.entries(weights)) model.morph.setMorphWeight(n, w);
  previous = weights;
  runtime.beforePhysics(0);
  runtime.afterPhysics();
  mesh.skeleton.prepare(true);  // the runtime's bone matrices into the skeleton's skinning matrices
  out.set(mesh.getPositionData(true, true), i * vertices * 3);
  const influences = [];
  for (let t = 0; t < manager.numTargets; t++) {
    const target = manager.getTarget(t);
    if (target.influence !== 0) influences.push([target.name, target.influence]);
  }
  report.influences.push(influences);
});
fs.writeFileSync(outPath, Buffer.from(out.buffer));
process.stdout.write(JSON.stringify(report));
engine.dispose();
