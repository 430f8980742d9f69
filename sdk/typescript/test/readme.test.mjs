// The ```ts blocks of README.md, as a user would copy them: all are
// type-checked together against the built types (import "@sbx/sdk"
// resolves to this package, "ws" to the dev dependency), then each is
// compiled to an ES module in .readme-examples/ and run with node against the
// server of SBX_URL and SBX_API_KEY; a block must exit 0.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import ts from "typescript";
import { needServer } from "./helpers.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const blocks = [...readFileSync(join(root, "README.md"), "utf8").matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
const dir = join(root, ".readme-examples");

test("README.md has examples", () => {
  assert.ok(blocks.length >= 5, `${blocks.length} blocks`);
});

test("the README's examples type-check", () => {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const files = blocks.map((code, i) => {
    const f = join(dir, `example${i + 1}.ts`);
    writeFileSync(f, code + "\nexport {};\n");
    return f;
  });
  const program = ts.createProgram(files, {
    target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ES2022, moduleResolution: ts.ModuleResolutionKind.Bundler,
    strict: true, noEmit: true, skipLibCheck: true, types: ["node"], lib: ["lib.es2022.d.ts", "lib.dom.d.ts"],
  });
  const diags = ts.getPreEmitDiagnostics(program);
  const text = ts.formatDiagnostics(diags, { getCanonicalFileName: (f) => f, getCurrentDirectory: () => root, getNewLine: () => "\n" });
  assert.equal(diags.length, 0, text);
});

blocks.forEach((code, i) => {
  test(`README example ${i + 1} runs: ${code.split("\n").find((l) => l.includes("Sandbox.") || l.includes("client."))?.trim().slice(0, 60)}`, () => {
    needServer();
    mkdirSync(dir, { recursive: true });
    const js = ts.transpileModule(code, { compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ES2022 } }).outputText;
    const f = join(dir, `example${i + 1}.mjs`);
    writeFileSync(f, js);
    const r = spawnSync(process.execPath, [f], { cwd: root, env: process.env, encoding: "utf8", timeout: 300_000 });
    assert.equal(r.status, 0, `example ${i + 1} exited ${r.status} ${r.signal ?? ""}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`);
  });
});
