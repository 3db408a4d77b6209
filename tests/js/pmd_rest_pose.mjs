// Load a PMD with babylon-mmd's PMD loader on @babylonjs/core's NullEngine, make its MmdModel in an MmdRuntime
// (IK on, no physics, no motion), update it once and print every bone's world position: the rest pose MMD plays.
// usage: node pmd_rest_pose.mjs NODE_MODULES_DIR MODEL.pmd
import fs from "node:fs";
import path from "node:path";
import { register } from "node:module";
import { pathToFileURL } from "node:url";

register("./runtime_hook.mjs", import.meta.url);

const [nodeModules, modelPath] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(path.join(nodeModules, p)).href);
const { NullEngine } = await load("@babylonjs/core/Engines/nullEngine.js");
const { Scene } = await load("@babylonjs/core/scene.js");
const { LoadAssetContainerAsync } = await load("@babylonjs/core/Loading/sceneLoader.js");
await load("babylon-mmd/esm/Loader/pmdLoader.js");
const { MmdRuntime } = await load("babylon-mmd/esm/Runtime/mmdRuntime.js");

const engine = new NullEngine();
const scene = new Scene(engine);
const container = await LoadAssetContainerAsync(new Uint8Array(fs.readFileSync(modelPath)), scene, {
  pluginExtension: ".pmd",
  pluginOptions: { mmdmodel: { materialBuilder: null, loggingEnabled: false } },
});
container.addAllToScene();
const runtime = new MmdRuntime(scene, null);
const model = runtime.createMmdModel(container.meshes[0]);
runtime.beforePhysics(0);
runtime.afterPhysics();
const out = {};
for (const b of model.runtimeBones) {
  const m = b.worldMatrix;  // Float32Array (16), column-major: translation at 12..14
  out[b.name] = [m[12], m[13], m[14]];
}
process.stdout.write(JSON.stringify(out));
engine.dispose();
