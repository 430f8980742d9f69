import { operations } from "./generated.js";
import type * as api from "./generated.js";
import type { OperationId, Operations } from "./generated.js";
import { errorFromResponse, SbxError } from "./errors.js";

/** DefaultURL is the API address of an `sbx serve` started with no flags. */
export const DefaultURL = "http://127.0.0.1:7070";

/** A WebSocket constructor, as the platform's global WebSocket or the ws package's. */
export type WebSocketConstructor = new (url: string, protocols?: string | string[]) => WebSocketLike;

/** The part of the standard WebSocket the SDK uses. */
export interface WebSocketLike {
  binaryType: string;
  readonly readyState: number;
  readonly protocol: string;
  send(data: string | ArrayBufferLike | ArrayBufferView): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: string, listener: (ev: any) => void): void;
}

/** How to reach the server; every field is optional. */
export interface ConnectionOptions {
  /** The server's base URL; default $SBX_URL, else http://127.0.0.1:7070. */
  url?: string;
  /** The API key, sent as a Bearer token; default $SBX_API_KEY. */
  apiKey?: string;
  /** The fetch to use; default the platform's global fetch. */
  fetch?: typeof fetch;
  /**
   * The WebSocket constructor PTYs connect with; default the platform's
   * global WebSocket (browsers, Deno, Bun, Node ≥ 22). On Node 18–21 pass
   * one, e.g. `import WebSocket from "ws"`.
   */
  WebSocket?: WebSocketConstructor;
  /** Headers added to every request. */
  headers?: Record<string, string>;
  /** A client to share instead of making one from the fields above. */
  client?: SbxClient;
}

/** The arguments of SbxClient.call for one operation. */
export type CallArgs<K extends OperationId> = {
  path?: Operations[K]["path"];
  query?: Operations[K]["query"];
  headers?: Operations[K]["headers"] & Record<string, string>;
  body?: Operations[K]["body"];
  signal?: AbortSignal;
};

/** Query values: arrays repeat their parameter; undefined leaves it out. */
export type Query = Record<string, string | number | boolean | readonly (string | number)[] | undefined>;

/** A request the low-level send makes. */
export interface SendOptions {
  query?: Query;
  /** A JSON body (encoded here). */
  json?: unknown;
  /** A raw body and its content type. */
  body?: BodyInit | null;
  contentType?: string;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

function env(name: string): string | undefined {
  const proc = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  const v = proc?.env?.[name];
  return v === "" ? undefined : v;
}

/** path renders /api/v1 followed by segments, each escaped. */
export function apiPath(...segments: (string | number)[]): string {
  return "/api/v1" + segments.map((s) => "/" + encodeURIComponent(String(s))).join("");
}

/** sandboxPath is the path of a sandbox, or of a sub-resource of it. */
export function sandboxPath(id: string, ...sub: (string | number)[]): string {
  return apiPath("sandboxes", id, ...sub);
}

/** Page selects one page of a list. */
export interface Page {
  limit?: number;
  cursor?: string;
}

/**
 * SbxClient calls one sbx server with one API key: `call` reaches every
 * operation of the OpenAPI document by its operationId, and the methods
 * below are the ergonomic layer over the routes that are not a sandbox's
 * (Sandbox holds those). Safe to share.
 */
export class SbxClient {
  /** The server's base URL, without a trailing slash. */
  readonly url: string;
  /** The API key, if any. */
  readonly apiKey: string | undefined;
  readonly #fetch: typeof fetch;
  readonly #headers: Record<string, string>;
  readonly #WebSocket: WebSocketConstructor | undefined;

  constructor(opts: ConnectionOptions = {}) {
    this.url = (opts.url ?? env("SBX_URL") ?? DefaultURL).replace(/\/+$/, "");
    this.apiKey = opts.apiKey ?? env("SBX_API_KEY");
    const f = opts.fetch ?? globalThis.fetch;
    if (typeof f !== "function") throw new Error("@sbx/sdk needs fetch: this platform has none; pass options.fetch");
    this.#fetch = f.bind(globalThis);
    this.#headers = { ...(opts.headers ?? {}) };
    this.#WebSocket = opts.WebSocket;
  }

  /** from answers opts.client, or a client made from opts. */
  static from(opts: ConnectionOptions = {}): SbxClient {
    return opts.client ?? new SbxClient(opts);
  }

  /** The WebSocket constructor PTYs use; it throws a clear error where there is none. */
  webSocket(): WebSocketConstructor {
    const ws = this.#WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
    if (!ws) {
      throw new Error(
        "@sbx/sdk: a PTY needs a WebSocket and this runtime has no global WebSocket (Node < 22): " +
          'pass one in the options, e.g. `import WebSocket from "ws"; Sandbox.create("base", { WebSocket })`',
      );
    }
    return ws;
  }

  /** target is the full URL of path with query. */
  target(path: string, query?: Query): string {
    let u = this.url + path;
    if (query) {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(query)) {
        if (v === undefined) continue;
        if (Array.isArray(v)) for (const x of v) q.append(k, String(x));
        else q.append(k, String(v));
      }
      const qs = q.toString();
      if (qs) u += "?" + qs;
    }
    return u;
  }

  /**
   * send sends one request and answers the Response of a 2xx, its body
   * unread; any other answer is thrown as its SbxError subclass. A
   * connection failure is thrown as fetch throws it (a TypeError).
   */
  async send(method: string, path: string, opts: SendOptions = {}): Promise<Response> {
    const headers: Record<string, string> = { "User-Agent": "sbx-typescript-sdk", ...this.#headers, ...(opts.headers ?? {}) };
    if (this.apiKey) headers["Authorization"] = "Bearer " + this.apiKey;
    let body: BodyInit | null | undefined = opts.body;
    if (opts.json !== undefined) {
      body = JSON.stringify(opts.json);
      headers["Content-Type"] = "application/json";
    } else if (body != null && opts.contentType) {
      headers["Content-Type"] = opts.contentType;
    }
    const init: RequestInit & { duplex?: string } = { method, headers, body: body ?? undefined, signal: opts.signal };
    if (body != null && typeof (body as ReadableStream).getReader === "function") init.duplex = "half";
    const resp = await this.#fetch(this.target(path, opts.query), init);
    if (resp.status < 200 || resp.status > 299) throw await errorFromResponse(resp);
    return resp;
  }

  /** request sends one request and answers its decoded JSON (undefined for an empty answer). */
  async request<T>(method: string, path: string, opts: SendOptions = {}): Promise<T> {
    const resp = await this.send(method, path, { ...opts, headers: { Accept: "application/json", ...(opts.headers ?? {}) } });
    const text = await resp.text();
    return (text === "" ? undefined : JSON.parse(text)) as T;
  }

  /**
   * call sends any operation of the OpenAPI document by its operationId:
   * path parameters fill its path, query parameters its query, body goes
   * as JSON (or as is, for binary and multipart bodies). JSON answers come
   * back decoded; other answers (NDJSON streams, files, pages, images) as
   * the Response, its body unread.
   *
   *     const me = await client.call("me", {});
   *     const page = await client.call("sandboxLogs", { path: { id }, query: { limit: 10 } });
   */
  async call<K extends OperationId>(operationId: K, args: CallArgs<K> = {}): Promise<Operations[K]["response"]> {
    const op = operations[operationId];
    if (!op) throw new Error(`no operation ${String(operationId)}`);
    const pathArgs = (args.path ?? {}) as Record<string, string | number>;
    const path = op.path.replace(/\{([^}]+)\}/g, (_, name: string) => {
      const v = pathArgs[name];
      if (v === undefined || v === "") throw new Error(`${String(operationId)}: path parameter ${name} is missing`);
      return encodeURIComponent(String(v));
    });
    const opts: SendOptions = { query: args.query as Query | undefined, headers: { ...(args.headers ?? {}) }, signal: args.signal };
    if (args.body !== undefined) {
      if (op.bodyType === "application/json") opts.json = args.body;
      else if (op.bodyType === "multipart/form-data") opts.body = args.body as FormData; // fetch sets the boundary
      else {
        opts.body = args.body as BodyInit;
        opts.contentType = op.bodyType ?? "application/octet-stream";
      }
    } else if (op.bodyType === "application/json") {
      opts.json = {};
    }
    if (op.responseType === "application/json") {
      return (await this.request(op.method, path, opts)) as Operations[K]["response"];
    }
    const resp = await this.send(op.method, path, opts);
    if (op.responseType === null) {
      await resp.body?.cancel();
      return undefined as Operations[K]["response"];
    }
    return resp as Operations[K]["response"];
  }

  // ---- who and what ----

  /** me says who the API key acts for, and which sbx answers. */
  me(): Promise<api.Me> {
    return this.request("GET", "/api/v1/me");
  }

  /** summary is the observability summary: usage, quotas, providers, next actions. */
  summary(): Promise<api.Summary> {
    return this.request("GET", "/api/v1/observability/summary");
  }

  /** listSandboxes returns one page of the key's sandboxes, newest first. */
  listSandboxes(opts: ListSandboxesOptions = {}): Promise<api.SandboxList> {
    const query: Query = { state: opts.states, template: opts.template, limit: opts.limit, cursor: opts.cursor };
    if (opts.metadata) query.metadata = Object.keys(opts.metadata).sort().map((k) => `${k}=${opts.metadata![k]}`);
    return this.request("GET", "/api/v1/sandboxes", { query });
  }

  /** getSandbox fetches a sandbox's data by provider sandbox ID or sbx UUID. */
  getSandbox(id: string): Promise<api.Sandbox> {
    return this.request("GET", sandboxPath(id));
  }

  // ---- snapshots ----

  /** listSnapshots lists a page of the snapshots the key reaches, of one source sandbox (its UUID) when given. */
  listSnapshots(opts: Page & { sandboxId?: string } = {}): Promise<api.SnapshotList> {
    return this.request("GET", "/api/v1/snapshots", { query: { sandboxID: opts.sandboxId, cursor: opts.cursor, limit: opts.limit } });
  }
  /** getSnapshot reads a snapshot by its ID. */
  getSnapshot(id: string): Promise<api.Snapshot> {
    return this.request("GET", apiPath("snapshots", id));
  }
  /** deleteSnapshot deletes a snapshot; sandboxes started from it go on. */
  deleteSnapshot(id: string): Promise<api.Snapshot> {
    return this.request("DELETE", apiPath("snapshots", id));
  }

  // ---- volumes ----

  /** createVolume makes a volume of sizeMB in the key's project (or projectId's). */
  createVolume(name: string, sizeMB: number, opts: { projectId?: string } = {}): Promise<api.Volume> {
    const body: api.CreateVolumeRequest = { name, sizeMB };
    if (opts.projectId) body.projectID = opts.projectId;
    return this.request("POST", "/api/v1/volumes", { json: body });
  }
  /** listVolumes lists a page of the volumes the key reaches. */
  listVolumes(page: Page = {}): Promise<api.VolumeList> {
    return this.request("GET", "/api/v1/volumes", { query: { cursor: page.cursor, limit: page.limit } });
  }
  /** getVolume reads a volume by ID, or by name in the key's project. */
  getVolume(ref: string): Promise<api.Volume> {
    return this.request("GET", apiPath("volumes", ref));
  }
  /** resizeVolume grows a volume's cap to sizeMB. */
  resizeVolume(ref: string, sizeMB: number): Promise<api.Volume> {
    return this.request("POST", apiPath("volumes", ref, "resize"), { json: { sizeMB } satisfies api.ResizeVolumeRequest });
  }
  /** deleteVolume deletes a volume and its data. */
  deleteVolume(ref: string): Promise<api.Volume> {
    return this.request("DELETE", apiPath("volumes", ref));
  }
  /** readVolumeFile reads a volume's file as bytes. */
  async readVolumeFile(ref: string, path: string): Promise<Uint8Array> {
    const resp = await this.send("GET", apiPath("volumes", ref, "files"), { query: { path } });
    return new Uint8Array(await resp.arrayBuffer());
  }
  /** writeVolumeFile writes data to a volume's file, making its parents. */
  writeVolumeFile(ref: string, path: string, data: FileData): Promise<api.EntryInfo> {
    return this.request("PUT", apiPath("volumes", ref, "files"), { query: { path }, body: toBody(data), contentType: "application/octet-stream" });
  }
  /** listVolumeFiles lists a volume's directory. */
  listVolumeFiles(ref: string, path = "/"): Promise<api.EntryList> {
    return this.request("GET", apiPath("volumes", ref, "files", "list"), { query: { path } });
  }

  // ---- runtimes ----

  /** listRuntimes returns one page of a workspace's runtimes (org and workspace by ID or name). */
  listRuntimes(org: string, workspace: string, page: Page = {}): Promise<api.RuntimeList> {
    return this.request("GET", runtimePath(org, workspace), { query: { limit: page.limit, cursor: page.cursor } });
  }
  /** getRuntime returns a runtime with its current sandbox. */
  getRuntime(org: string, workspace: string, id: string): Promise<api.Runtime> {
    return this.request("GET", runtimePath(org, workspace, id));
  }
  /** updateRuntime replaces the configuration fields req sets; its next start uses them. */
  updateRuntime(org: string, workspace: string, id: string, req: api.UpdateRuntimeRequest): Promise<api.Runtime> {
    return this.request("PATCH", runtimePath(org, workspace, id), { json: req });
  }
  /** startRuntime provisions a sandbox for an idle runtime and answers once it is ready. */
  startRuntime(org: string, workspace: string, id: string, req: api.StartRuntimeRequest = {}): Promise<api.Runtime> {
    return this.request("POST", runtimePath(org, workspace, id, "start"), { json: req });
  }
  /** pauseRuntime pauses a runtime's sandbox. */
  pauseRuntime(org: string, workspace: string, id: string): Promise<api.Runtime> {
    return this.request("POST", runtimePath(org, workspace, id, "pause"));
  }
  /** resumeRuntime resumes a runtime's paused sandbox. */
  resumeRuntime(org: string, workspace: string, id: string): Promise<api.Runtime> {
    return this.request("POST", runtimePath(org, workspace, id, "resume"));
  }
  /** resetRuntime kills a runtime's sandbox and leaves the runtime idle. */
  resetRuntime(org: string, workspace: string, id: string): Promise<api.Runtime> {
    return this.request("POST", runtimePath(org, workspace, id, "reset"));
  }
  /** keepaliveRuntime keeps a runtime's sandbox alive at least extendSeconds more (default its configured timeout). */
  keepaliveRuntime(org: string, workspace: string, id: string, extendSeconds?: number): Promise<api.Runtime> {
    const body: api.KeepaliveRuntimeRequest = {};
    if (extendSeconds && extendSeconds > 0) body.extend_seconds = Math.ceil(extendSeconds);
    return this.request("POST", runtimePath(org, workspace, id, "keepalive"), { json: body });
  }
}

function runtimePath(org: string, workspace: string, ...rest: string[]): string {
  return apiPath("org", org, "ws", workspace, "runtimes", ...rest);
}

/** Filters and page of a sandbox list. */
export interface ListSandboxesOptions extends Page {
  /** Any of these states. */
  states?: api.Sandbox["state"][];
  /** This template only. */
  template?: string;
  /** Every one of these pairs. */
  metadata?: Record<string, string>;
}

/** What a file write takes: text (UTF-8), bytes, a Blob or a stream of bytes. */
export type FileData = string | Uint8Array | ArrayBuffer | Blob | ReadableStream<Uint8Array>;

/** toBody turns FileData into a fetch body. */
export function toBody(data: FileData): BodyInit {
  if (typeof data === "string") return new TextEncoder().encode(data);
  return data as BodyInit;
}

export { SbxError };
