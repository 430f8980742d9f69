import type { EntryInfo, EntryList, FileEvent } from "./generated.js";
import { SbxClient, sandboxPath, toBody, type FileData } from "./client.js";
import { NotFoundError, SandboxStoppedError, StreamEndedError } from "./errors.js";
import { isAbort, ndjson } from "./stream.js";

/** One file of writeFiles: its name (or path) under the directory, and its data. */
export interface FileUpload {
  /** Its name, or a relative path, under the directory. */
  name: string;
  data: string | Uint8Array | ArrayBuffer | Blob;
}

/** The optional parts of a write. */
export interface WriteOptions {
  /** The user that owns what is made; default the sandbox's default user. */
  user?: string;
  /** The file's permissions in octal, e.g. "755"; default 644, or a replaced file's. */
  mode?: string;
}

/**
 * Files reads and writes a sandbox's files, through its agent. Paths are
 * absolute in the sandbox; a relative one is relative to /workspace. A
 * missing path is a NotFoundError naming it.
 */
export class Files {
  constructor(readonly client: SbxClient, readonly sandboxId: string) {}

  #path(...sub: string[]): string {
    return sandboxPath(this.sandboxId, "files", ...sub);
  }

  /** read reads a whole file as text (UTF-8), or as bytes, a Blob or a stream with `format`. */
  read(path: string, opts?: { format?: "text" }): Promise<string>;
  read(path: string, opts: { format: "bytes" }): Promise<Uint8Array>;
  read(path: string, opts: { format: "blob" }): Promise<Blob>;
  read(path: string, opts: { format: "stream" }): Promise<ReadableStream<Uint8Array>>;
  async read(path: string, opts: { format?: "text" | "bytes" | "blob" | "stream" } = {}): Promise<string | Uint8Array | Blob | ReadableStream<Uint8Array>> {
    const resp = await this.client.send("GET", this.#path(), { query: { path } });
    switch (opts.format ?? "text") {
      case "bytes":
        return new Uint8Array(await resp.arrayBuffer());
      case "blob":
        return resp.blob();
      case "stream":
        return resp.body ?? new ReadableStream({ start: (c) => c.close() });
      default:
        return resp.text();
    }
  }

  /** readBytes reads a whole file as bytes. */
  readBytes(path: string): Promise<Uint8Array> {
    return this.read(path, { format: "bytes" });
  }

  /** readStream opens a file for reading as it streams. */
  readStream(path: string): Promise<ReadableStream<Uint8Array>> {
    return this.read(path, { format: "stream" });
  }

  /**
   * write writes text, bytes, a Blob or a stream of bytes to a file,
   * making its parent directories, and describes the file written.
   */
  write(path: string, data: FileData, opts: WriteOptions = {}): Promise<EntryInfo> {
    return this.client.request("PUT", this.#path(), {
      query: { path, mode: opts.mode, user: opts.user },
      body: toBody(data),
      contentType: "application/octet-stream",
    });
  }

  /** writeFiles writes files into dir in one multipart request and describes them. */
  async writeFiles(dir: string, files: FileUpload[], opts: { user?: string } = {}): Promise<EntryInfo[]> {
    const form = new FormData();
    for (const f of files) {
      const blob = f.data instanceof Blob ? f.data : new Blob([typeof f.data === "string" ? new TextEncoder().encode(f.data) : (f.data as BlobPart)]);
      form.append("file", blob, f.name);
    }
    const list = await this.client.request<EntryList>("POST", this.#path(), { query: { path: dir, user: opts.user }, body: form });
    return list.items;
  }

  /** list describes the entries under path to depth levels (default 1), sorted by path. */
  async list(path: string, opts: { depth?: number } = {}): Promise<EntryInfo[]> {
    const q = { path, depth: opts.depth && opts.depth > 0 ? opts.depth : undefined };
    return (await this.client.request<EntryList>("GET", this.#path("list"), { query: q })).items;
  }

  /** stat describes one entry. */
  stat(path: string): Promise<EntryInfo> {
    return this.client.request("GET", this.#path("stat"), { query: { path } });
  }

  /** getInfo is stat. */
  getInfo(path: string): Promise<EntryInfo> {
    return this.stat(path);
  }

  /** exists says whether path exists. */
  async exists(path: string): Promise<boolean> {
    try {
      await this.stat(path);
      return true;
    } catch (err) {
      if (err instanceof NotFoundError) return false;
      throw err;
    }
  }

  /** makeDir makes a directory and its parents; an existing directory is no error. */
  makeDir(path: string, opts: { user?: string } = {}): Promise<EntryInfo> {
    return this.client.request("POST", this.#path("mkdir"), { query: { user: opts.user }, json: { path } });
  }

  /** rename moves an entry and describes it at its destination. */
  rename(from: string, to: string): Promise<EntryInfo> {
    return this.client.request("POST", this.#path("move"), { json: { from, to } });
  }

  /** remove removes an entry, a directory with all it holds. */
  async remove(path: string): Promise<void> {
    const resp = await this.client.send("DELETE", this.#path(), { query: { path } });
    await resp.body?.cancel();
  }

  /**
   * watch watches path (and, with recursive, what is under it) and calls
   * onEvent for each change, in order, until stop(). It answers once the
   * watch is set up: changes from then on are seen.
   */
  async watch(path: string, onEvent: (event: FileEvent) => void, opts: { recursive?: boolean; abortSignal?: AbortSignal } = {}): Promise<WatchHandle> {
    const abort = new AbortController();
    opts.abortSignal?.addEventListener("abort", () => abort.abort(), { once: true });
    const resp = await this.client.send("GET", this.#path("watch"), { query: { path, recursive: !!opts.recursive }, signal: abort.signal });
    return new WatchHandle(path, resp, abort, onEvent);
  }
}

/** WatchHandle is a running watch. */
export class WatchHandle {
  readonly #abort: AbortController;
  readonly #done: Promise<void>;
  #stopped = false;

  constructor(path: string, resp: Response, abort: AbortController, onEvent: (e: FileEvent) => void) {
    this.#abort = abort;
    this.#done = (async () => {
      try {
        for await (const e of ndjson<FileEvent>(resp)) {
          if (this.#stopped) return;
          if (e.type === "error") throw new SandboxStoppedError(e.error ?? "the sandbox stopped");
          onEvent(e);
        }
      } catch (err) {
        if (this.#stopped || isAbort(err)) return;
        throw err;
      }
      if (!this.#stopped) throw new StreamEndedError(`the agent ended the watch of ${path}`);
    })();
    this.#done.catch(() => {});
  }

  /** stop ends the watch; no event is delivered once it is called. */
  stop(): void {
    this.#stopped = true;
    this.#abort.abort();
  }

  /** wait answers when the watch ends: after stop, or with why it broke. */
  wait(): Promise<void> {
    return this.#done;
  }
}
