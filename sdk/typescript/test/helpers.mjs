// Shared by the tests: the server (SBX_URL, SBX_API_KEY: the admin key),
// the ws package's WebSocket for PTYs on Node < 22, and bounded waits.
import WebSocket from "ws";
import { Sandbox, SbxClient } from "../dist/esm/index.js";

export { WebSocket };

/** needServer returns the server's address and key, or fails: these tests do not skip. */
export function needServer() {
  const url = process.env.SBX_URL, apiKey = process.env.SBX_API_KEY;
  if (!url || !apiKey) throw new Error("the tests need a running sbx serve: set SBX_URL and SBX_API_KEY (the Go test e2e/sdk_typescript_local_test.go does)");
  return { url, apiKey };
}

export const client = () => new SbxClient({ ...needServer(), WebSocket });

const made = [];
/** create creates a sandbox and remembers it for cleanup. */
export async function create(template = "base", opts = {}) {
  const sb = await Sandbox.create(template, { waitReady: true, timeout: 900, WebSocket, ...opts });
  made.push(sb);
  return sb;
}

/** cleanup deletes every sandbox create made that still runs. */
export async function cleanup() {
  for (const sb of made.splice(0)) {
    await sb.delete().catch(() => {});
  }
}

/** until polls fn (bounded: tries × ms) until it answers truthy, and answers that. */
export async function until(what, fn, tries = 100, ms = 100) {
  let last;
  for (let i = 0; i < tries; i++) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, ms));
  }
  throw new Error(`${what}: not after ${tries} tries${last ? ": " + last : ""}`);
}

/** suffix is a name part unique to this run. */
export const suffix = () => Math.random().toString(36).slice(2, 8);
