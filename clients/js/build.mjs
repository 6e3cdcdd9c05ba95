// Makes the package's files from the one source the server also serves,
// static/waitroom.js: waitroom.js as it is (a classic script that sets
// window.Waitroom) and waitroom.mjs, the same code as an ES module whose
// exports are connect, solvePow, shown and version (and Waitroom, all four).
// npm pack runs it (prepack); it fails when the source's opening or closing
// lines are not the ones it rewrites, so a change there is noticed.
import { copyFileSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const source = readFileSync(join(root, "static", "waitroom.js"), "utf8");

const open = "(function (global) {\n";
const api = /\n  global\.Waitroom = (\{ connect: connect, solvePow: solvePow, shown: shown, version: "[^"]+" \});\n\}\)\(typeof window !== "undefined" \? window : this\);\n$/;

function fail(what) {
  console.error(`build.mjs: static/waitroom.js ${what}; update build.mjs with it`);
  process.exit(1);
}

const start = source.indexOf(open);
if (start < 0) fail(`has no line ${JSON.stringify(open.trim())}`);
const end = source.match(api);
if (!end) fail("does not end by setting global.Waitroom as build.mjs expects");

const module = source.slice(0, start) +
  "const Waitroom = (function (global) {\n" +
  source.slice(start + open.length, end.index) +
  `\n  return ${end[1]};\n})(typeof window !== "undefined" ? window : globalThis);\n\n` +
  "export const { connect, solvePow, shown, version } = Waitroom;\n" +
  "export { Waitroom };\nexport default Waitroom;\n";

writeFileSync(join(here, "waitroom.mjs"), module);
copyFileSync(join(root, "static", "waitroom.js"), join(here, "waitroom.js"));
copyFileSync(join(root, "LICENSE"), join(here, "LICENSE"));
