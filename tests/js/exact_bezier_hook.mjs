// A module hook for tests/js/mmd_runtime_world.mjs --exact-bezier: babylon-mmd's runtime with its curve weight
// solved to float64 precision. babylon-mmd's own BezierInterpolate stops halving once |x(t) - x| < 1e-5, which
// moves the weight of a steep curve by a few 1e-5; this module stands in for its "./bezierInterpolate" import.
const EXACT = new URL("./exact_bezier.mjs", import.meta.url).href;

export async function resolve(specifier, context, next) {
  if (/(^|\/)bezierInterpolate(\.js)?$/.test(specifier) && (context.parentURL || "").includes("babylon-mmd")) {
    return { url: EXACT, shortCircuit: true };
  }
  return next(specifier, context);
}
