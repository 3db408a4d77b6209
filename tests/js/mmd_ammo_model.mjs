// A PMX in babylon-mmd's MMD physics, the set-up mmd_physics_settle.mjs and mmd_physics_motion.mjs share:
// MmdRuntime with MmdAmmoPhysics and the ammo.js wasm babylon-mmd ships, on @babylonjs/core's NullEngine, every
// physics step the fixed 1/60 s (the caller steps the world itself).
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

export async function ammoModel(nodeModules, modelPath, gravity) {
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
  const { MmdAmmoJSPlugin } = await load("babylon-mmd/esm/Runtime/Physics/mmdAmmoJSPlugin.js");
  const { MmdAmmoPhysics } = await load("babylon-mmd/esm/Runtime/Physics/mmdAmmoPhysics.js");

  const engine = new NullEngine();
  const scene = new Scene(engine);
  const plugin = new MmdAmmoJSPlugin(false, ammo);  // false: every step is the fixed 1/60 s, not the frame's delta
  scene.enablePhysics(new Vector3(0, -gravity, 0), plugin);
  const bytes = fs.readFileSync(modelPath);
  const container = await LoadAssetContainerAsync(new Uint8Array(bytes), scene, {
    pluginExtension: ".pmx",
    pluginOptions: { mmdmodel: { materialBuilder: null, loggingEnabled: false } },
  });
  container.addAllToScene();
  const runtime = new MmdRuntime(scene, new MmdAmmoPhysics(scene));
  const model = runtime.createMmdModel(container.meshes[0]);
  return { load, engine, scene, runtime, model };
}
