/** ndjson reads a Response's NDJSON body one decoded object at a time. */
export async function* ndjson<T>(resp: Response): AsyncGenerator<T, void, undefined> {
  if (!resp.body) return;
  const reader = resp.body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (line) yield JSON.parse(line) as T;
      }
    }
    buf += decoder.decode();
    if (buf.trim()) yield JSON.parse(buf) as T;
  } finally {
    reader.cancel().catch(() => {});
  }
}

/** fromBase64 decodes base64 into bytes. */
export function fromBase64(b64: string): Uint8Array {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** concat joins byte chunks. */
export function concat(chunks: Uint8Array[]): Uint8Array {
  let n = 0;
  for (const c of chunks) n += c.length;
  const out = new Uint8Array(n);
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.length;
  }
  return out;
}

/** seconds renders a number of seconds as whole seconds, rounding up; undefined when not positive. */
export function seconds(s: number | undefined): number | undefined {
  return s !== undefined && s > 0 ? Math.ceil(s) : undefined;
}

/** isAbort says whether err is an abort of a fetch or a stream. */
export function isAbort(err: unknown): boolean {
  return typeof err === "object" && err !== null && (err as { name?: string }).name === "AbortError";
}
