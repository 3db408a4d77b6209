// Parse VMD files with babylon-mmd (VmdData.CheckedCreate, VmdObject, VmdLoader) and print what it saw as
// one JSON object per file. usage: node vmd_counts.mjs NODE_MODULES_DIR FILE...
import fs from "node:fs";
import path from "node:path";
import { register } from "node:module";
import { pathToFileURL } from "node:url";

// babylon-mmd's ESM build and @babylonjs/core import modules without the ".js" extension, which plain Node does
// not resolve (pmx.md §5); retry such a specifier, relative or a package subpath, with ".js" appended.
const hook = `export async function resolve(specifier, context, next) {
  try {
    return await next(specifier, context);
  } catch (e) {
    if (e.code === "ERR_MODULE_NOT_FOUND" && !specifier.endsWith(".js")) return next(specifier + ".js", context);
    throw e;
  }
}`;
register("data:text/javascript," + encodeURIComponent(hook));

const [nodeModules, ...files] = process.argv.slice(2);
const esm = (p) => pathToFileURL(path.join(nodeModules, "babylon-mmd", "esm", "Loader", p)).href;
const { VmdData, VmdObject } = await import(esm("Parser/vmdObject.js"));
const { VmdLoader } = await import(esm("vmdLoader.js"));

const results = [];
for (const file of files) {
  const b = fs.readFileSync(file);
  const ab = b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
  const warnings = [];
  const logger = { log() {}, warn: (m) => warnings.push(String(m)), error: (m) => warnings.push(String(m)) };
  try {
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
    loader.warn = (m) => warnings.push(String(m));
    loader.error = (m) => warnings.push(String(m));
    const anim = await loader.loadFromVmdObjectAsync("motion", o);
    const tracks = anim.movableBoneTracks.map((t) => ({
      name: t.name,
      frames: Array.from(t.frameNumbers),
      positionInterpolations: Array.from(t.positionInterpolations),
      rotationInterpolations: Array.from(t.rotationInterpolations),
      physicsToggles: Array.from(t.physicsToggles),
    }));
    results.push({
      file,
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
      warnings,
    });
  } catch (e) {
    results.push({ file, error: String(e && e.message ? e.message : e), warnings });
  }
}
console.log(JSON.stringify(results));
