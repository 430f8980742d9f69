#!/usr/bin/env node
// bench.mjs times the SDK's create → run `true` → delete loop against the
// server of SBX_URL and SBX_API_KEY: SBX_BENCH_N loops (default 20) of
// SBX_BENCH_TEMPLATE (default base), each created with waitReady, after 2
// warm-up loops, each operation
// timed with performance.now(). It prints one JSON line to stdout:
// {"create":[ms,...],"run":[ms,...],"delete":[ms,...]}. It needs the built
// SDK (npm run build).
import { performance } from "node:perf_hooks";
import { Sandbox, SbxClient } from "./dist/esm/index.js";

const n = Number(process.env.SBX_BENCH_N ?? 20);
const template = process.env.SBX_BENCH_TEMPLATE || "base";
if (!Number.isInteger(n) || n < 1) {
  console.error(`SBX_BENCH_N must be a positive integer, not ${process.env.SBX_BENCH_N}`);
  process.exit(2);
}
const client = new SbxClient(); // SBX_URL, SBX_API_KEY
const times = { create: [], run: [], delete: [] };

async function loop(record) {
  let t = performance.now();
  const sandbox = await Sandbox.create(template, { client, waitReady: true });
  const created = performance.now() - t;
  try {
    t = performance.now();
    const res = await sandbox.commands.run("true");
    const ran = performance.now() - t;
    if (res.exitCode !== 0) throw new Error(`true exited ${res.exitCode}: ${res.stderr}`);
    t = performance.now();
    await sandbox.delete();
    const deleted = performance.now() - t;
    if (record) {
      times.create.push(created);
      times.run.push(ran);
      times.delete.push(deleted);
    }
  } catch (err) {
    await sandbox.delete().catch(() => {});
    throw err;
  }
}

try {
  for (let i = 0; i < 2; i++) await loop(false);
  for (let i = 0; i < n; i++) await loop(true);
} catch (err) {
  console.error(`bench: ${err?.stack ?? err}`);
  process.exit(1);
}
const round = (a) => a.map((ms) => Math.round(ms * 1000) / 1000);
process.stdout.write(JSON.stringify({ create: round(times.create), run: round(times.run), delete: round(times.delete) }) + "\n");
