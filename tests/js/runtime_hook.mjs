// babylon-mmd's ESM build imports modules, its own and @babylonjs/core's, without the ".js" extension, which
// plain Node does not resolve; retry any such specifier with ".js" appended (pmx.md §5).
export async function resolve(specifier, context, next) {
  try {
    return await next(specifier, context);
  } catch (e) {
    if (e.code === "ERR_MODULE_NOT_FOUND" && !specifier.endsWith(".js")) {
      return next(specifier + ".js", context);
    }
    throw e;
  }
}
