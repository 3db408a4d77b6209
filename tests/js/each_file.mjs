// What the babylon-mmd parsing scripts share: each file on the command line read as an ArrayBuffer and given
// to `parse(buffer, logger)`, whose log warnings and errors are collected; one JSON array is printed, an
// object per file: its name, what `parse` returned (or the error it threw) and the warnings.
import fs from "node:fs";

export async function printEach(files, parse) {
  const results = [];
  for (const file of files) {
    const b = fs.readFileSync(file);
    const ab = b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
    const warnings = [];
    const logger = { log() {}, warn: (m) => warnings.push(String(m)), error: (m) => warnings.push(String(m)) };
    try {
      results.push({ file, ...(await parse(ab, logger)), warnings });
    } catch (e) {
      results.push({ file, error: String(e && e.message ? e.message : e), warnings });
    }
  }
  console.log(JSON.stringify(results));
}
