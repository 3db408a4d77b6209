// Parse VMD files with babylon-mmd (VmdData.CheckedCreate, VmdObject, VmdLoader) and print what it saw as
// one JSON object per file. usage: node vmd_counts.mjs NODE_MODULES_DIR FILE...
import path from "node:path";
import { register } from "node:module";
import { pathToFileURL } from "node:url";

import { printEach } from "./each_file.mjs";

register("./runtime_hook.mjs", import.meta.url);

const [nodeModules, ...files] = process.argv.slice(2);
const esm = (p) => pathToFileURL(path.join(nodeModules, "babylon-mmd", "esm", "Loader", p)).href;
const { VmdData, VmdObject } = await import(esm("Parser/vmdObject.js"));
const { VmdLoader } = await import(esm("vmdLoader.js"));

await printEach(files, async (ab, logger) => {
  const data = VmdData.CheckedCreate(ab, logger);
  if (data === null) throw new Error("VmdData.CheckedCreate returned null (invalid VMD data)");
  const o = VmdObject.Parse(data);
  const bones = [];
  for (let i = 0; i < o.boneKeyFrames.length; ++i) {
    const k = o.boneKeyFrames.get(i);
    bones.push({ name: k.boneName, frame: k.frameNumber, interpolation: Array.from(k.interpolation) });
  }
  const morphs = [];
  for (let i = 0; i < o.morphKeyFrames.length; ++i) {
    const k = o.morphKeyFrames.get(i);
    morphs.push({ name: k.morphName, frame: k.frameNumber });
  }
  const loader = new VmdLoader(null);
  loader.optimizeEmptyTracks = false; // keep every track, so counts compare one to one
  loader.warn = logger.warn;
  loader.error = logger.error;
  const anim = await loader.loadFromVmdObjectAsync("motion", o);
  const tracks = anim.movableBoneTracks.map((t) => ({
    name: t.name,
    frames: Array.from(t.frameNumbers),
    positionInterpolations: Array.from(t.positionInterpolations),
    rotationInterpolations: Array.from(t.rotationInterpolations),
    physicsToggles: Array.from(t.physicsToggles),
  }));
  return {
    boneKeys: o.boneKeyFrames.length,
    morphKeys: o.morphKeyFrames.length,
    cameraKeys: o.cameraKeyFrames.length,
    lightKeys: o.lightKeyFrames.length,
    selfShadowKeys: o.selfShadowKeyFrames.length,
    propertyKeys: o.propertyKeyFrames.map((k) => ({
      frame: k.frameNumber, visible: k.visible, ikStates: k.ikStates,
    })),
    bones,
    morphs,
    tracks,
    morphTracks: anim.morphTracks.map((t) => ({ name: t.name, frames: Array.from(t.frameNumbers) })),
  };
});
