// @waitroom/edge as a package: npm pack makes the tarball, unpacked under
// node_modules/@waitroom/edge of a fresh directory as a shop installs it;
// Node resolves both entry points by name, and the declarations
// type-check a use of the API under tsc --strict and refuse a wrong one.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, mkdirSync, readdirSync, readFileSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);
const here = join(dirname(fileURLToPath(import.meta.url)), "..");

test("the packed package", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "waitroom-edge-pkg-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const { stdout } = await run("npm", ["pack", "--json", "--pack-destination", dir, here]);
  const pkg = join(dir, "node_modules", "@waitroom", "edge");
  mkdirSync(pkg, { recursive: true });
  await run("tar", ["-xzf", join(dir, JSON.parse(stdout)[0].filename), "-C", pkg, "--strip-components=1"]);

  await t.test("holds the modules, their declarations and the README", () => {
    assert.deepEqual(readdirSync(pkg).sort(), ["LICENSE", "README.md", "cloudfront.d.ts", "cloudfront.mjs", "edge.d.ts", "edge.mjs", "package.json"]);
    const meta = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8"));
    assert.equal(meta.type, "module");
    assert.equal(meta.dependencies, undefined, "no dependencies");
  });

  await t.test("Node resolves it by name", async () => {
    const { stdout } = await run("node", ["--input-type=module", "-e",
      `import * as m from "@waitroom/edge"; import { cloudfront } from "@waitroom/edge/cloudfront";
       console.log(JSON.stringify({ keys: Object.keys(m).sort(), cf: typeof cloudfront, same: m.default.handle === m.handle }));`], { cwd: dir });
    assert.deepEqual(JSON.parse(stdout), {
      keys: ["AmbiguousPathError", "Keys", "credentialHash", "decide", "default", "handle", "matchPath", "normalizeHost", "normalizePath", "parseRoutes", "verifySession", "version"],
      cf: "function", same: true,
    });
  });

  await t.test("tsc --strict takes a right use and refuses a wrong one", async () => {
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({
      compilerOptions: { strict: true, noEmit: true, target: "es2022", module: "nodenext", moduleResolution: "nodenext", lib: ["es2022", "dom"], types: [] },
      files: ["ok.ts"],
    }));
    writeFileSync(join(dir, "ok.ts"), `import { handle, type Env } from "@waitroom/edge";
import { cloudfront, type CloudFrontRequestEvent } from "@waitroom/edge/cloudfront";
export default {
  fetch: (request: Request, env: Env): Promise<Response> => handle(request, env, (r) => fetch(r), { clientAddress: "192.0.2.1" }),
};
export const viewer = (event: CloudFrontRequestEvent, env: Env) => cloudfront(event, env);
`);
    const tsc = join(here, "node_modules", "typescript", "bin", "tsc");
    await run("node", [tsc, "-p", "tsconfig.json"], { cwd: dir });
    writeFileSync(join(dir, "ok.ts"), `import { handle } from "@waitroom/edge";
export const r: Promise<string> = handle(new Request("https://a.example/"), { WAITROOM_URL: "x" }, (r) => fetch(r));
`);
    const wrong = await run("node", [tsc, "-p", "tsconfig.json"], { cwd: dir }).then(() => null, (e) => e.stdout);
    assert.match(wrong || "", /WAITROOM_ROUTES|Promise<Response>/, "tsc took a wrong use");
  });
});
