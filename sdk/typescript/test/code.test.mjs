// runCode in the code-interpreter template: state kept between runs,
// streamed callbacks, a PNG figure, an error, contexts.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { needServer, cleanup, create } from "./helpers.mjs";

needServer();
after(cleanup);

test("runCode keeps state, streams output and gives a PNG result", async () => {
  const sb = await create("code-interpreter", { memoryMB: 1024 });
  const first = await sb.runCode("x = 41");
  assert.equal(first.end?.status, "ok");
  assert.equal(first.error, undefined);
  const second = await sb.runCode("x + 1");
  assert.equal(second.text, "42");
  assert.equal(second.end?.executionCount, 2);

  const out = [], results = [];
  const printed = await sb.runCode("print('hello'); import sys; print('warn', file=sys.stderr)", { onStdout: (t) => out.push(t), onStderr: () => {}, onResult: (r) => results.push(r) });
  assert.equal(out.join(""), "hello\n");
  assert.equal(printed.stdout, "hello\n");
  assert.equal(printed.stderr, "warn\n");
  assert.deepEqual(printed.logs.stdout, out);

  const fig = await sb.runCode("import matplotlib.pyplot as plt\nplt.figure(figsize=(4, 3), dpi=100)\nplt.plot([1, 3, 2])\nplt.show()");
  const png = fig.results.find((r) => r.png);
  assert.ok(png, JSON.stringify(fig.results.map((r) => r.formats())));
  const bytes = Buffer.from(png.png, "base64");
  assert.deepEqual([...bytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

  const errors = [];
  const failed = await sb.runCode("1/0", { onError: (e) => errors.push(e) });
  assert.equal(failed.error?.name, "ZeroDivisionError");
  assert.equal(errors.length, 1);
  assert.equal(failed.end?.status, "error");

  const ctx = await sb.createCodeContext({ language: "python" });
  assert.equal((await sb.runCode("x = 'other'", { context: ctx })).end?.contextId, ctx.id);
  assert.equal((await sb.runCode("x")).text, "41");
  assert.equal((await sb.runCode("x", { context: ctx.id })).text, "'other'");
  assert.ok((await sb.code.listContexts()).some((c) => c.id === ctx.id));
  await sb.code.restartContext(ctx);
  assert.equal((await sb.runCode("'x' in dir()", { context: ctx })).text, "False");
  await sb.code.interrupt(ctx);
  await sb.code.deleteContext(ctx);
  assert.ok(!(await sb.code.listContexts()).some((c) => c.id === ctx.id));
  const bash = await sb.runCode("echo $((6*7))", { language: "bash" });
  assert.equal(bash.stdout, "42\n");
});
