// The set-up the babylon-mmd runtime scripts share: a PMX loaded on @babylonjs/core's NullEngine, its MmdModel in
// an MmdRuntime without physics, a VMD set as its runtime animation. A caller registers its module hooks
// (runtime_hook.mjs, ...) before it calls this, since the modules are loaded here.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

export async function runtimeWithMotion(nodeModules, modelPath, motionPath) {
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
  const runtime = new MmdRuntime(scene, null);  // no physics
  const model = runtime.createMmdModel(container.meshes[0]);
  const vmdBytes = fs.readFileSync(motionPath);
  const vmd = vmdBytes.buffer.slice(vmdBytes.byteOffset, vmdBytes.byteOffset + vmdBytes.byteLength);
  const animation = await new VmdLoader(scene).loadFromVmdObjectAsync("motion", VmdObject.ParseFromBuffer(vmd));
  model.setRuntimeAnimation(model.createRuntimeAnimation(animation));
  return { load, engine, scene, container, runtime, model };
}
