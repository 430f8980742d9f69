import type * as api from "./generated.js";
import { SbxClient, sandboxPath, type ConnectionOptions, type ListSandboxesOptions, type Page } from "./client.js";
import { SbxError } from "./errors.js";
import { Commands } from "./commands.js";
import { Files } from "./files.js";
import { Pty } from "./pty.js";
import { Code, type Execution, type RunCodeOptions } from "./code.js";
import { isAbort, ndjson, seconds } from "./stream.js";

/** The optional parts of a create; what is left out is the server's default. */
export interface SandboxCreateOptions extends ConnectionOptions {
  /** Seconds until the sandbox is killed (or paused, with autoPause); default 3600. */
  timeout?: number;
  /** Answer only once the sandbox runs. */
  waitReady?: boolean;
  envVars?: Record<string, string>;
  metadata?: Record<string, string>;
  /** On timeout, pause instead of kill. */
  autoPause?: boolean;
  /** vCPU; default 2. */
  cpu?: number;
  /** Memory limit in MiB; default 512. */
  memoryMB?: number;
  /** Cap of the writable layer in MiB. */
  diskMB?: number;
  gpu?: api.GPU;
  kind?: api.CreateSandboxRequest["kind"];
  /** Who reaches its preview URLs (default private) and whether their traffic wakes it. */
  preview?: api.Preview;
  /** The ports it serves, listed with their preview URLs. */
  ports?: number[];
  /** What it may connect to; default its template's policy, else the server's. */
  egress?: api.Egress;
  /** The project it belongs to; default the key's. */
  projectId?: string;
  /** An OCI image to start from in place of a template. */
  image?: api.Image;
  /** A snapshot to start from in place of a template. */
  snapshotId?: string;
  /** Volumes of its project to mount. */
  volumes?: api.VolumeMount[];
  /** How the create uses the template's warm pool: prefer (default), require or bypass. */
  warmPool?: api.CreateSandboxRequest["warmPool"];
  /** The provider it runs on, one of the server's; default the server's default. */
  provider?: string;
  /** Makes the create safe to retry; default a fresh UUID (the create retries once with it when the connection fails). */
  idempotencyKey?: string;
}

/** The optional parts of a connect. */
export interface SandboxConnectOptions extends ConnectionOptions {
  /** New lifetime in seconds from now; default keeps the sandbox's timeout. */
  timeout?: number;
  /** A new access token; the old one stops working. */
  rotateAccessToken?: boolean;
}

/** The optional parts of a snapshot. */
export interface SnapshotOptions {
  name?: string;
  metadata?: Record<string, string>;
  /** Files alone, without memory and processes. */
  filesOnly?: boolean;
}

function uuid(): string {
  const c = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto;
  if (c?.randomUUID) return c.randomUUID();
  return "10000000-1000-4000-8000-100000000000".replace(/[018]/g, (ch) =>
    (Number(ch) ^ ((Math.random() * 16) >> (Number(ch) / 4))).toString(16),
  );
}

/**
 * Sandbox is a handle on one sandbox, as create and connect answer it: its
 * methods address it by its sbx UUID and keep `data` up to date with each
 * answer; commands, files, pty and code reach its agent through the server.
 *
 *     const sandbox = await Sandbox.create("base", { timeout: 1800, waitReady: true });
 *     const res = await sandbox.commands.run("echo hi");
 *     await sandbox.delete();
 */
export class Sandbox {
  /** The client it calls through. */
  readonly client: SbxClient;
  /** Processes: run, start, follow, signal. */
  readonly commands: Commands;
  /** The filesystem: read, write, list, watch. */
  readonly files: Files;
  /** Interactive terminals. */
  readonly pty: Pty;
  /** Stateful code contexts. */
  readonly code: Code;
  #data: api.Sandbox;

  constructor(client: SbxClient, data: api.Sandbox) {
    this.client = client;
    this.#data = data;
    this.commands = new Commands(client, data.id);
    this.files = new Files(client, data.id);
    this.pty = new Pty(client, data.id);
    this.code = new Code(client, data.id);
  }

  /** create starts a sandbox from a template (or, with options alone, from an image or a snapshot). */
  static async create(template?: string | SandboxCreateOptions, opts: SandboxCreateOptions = {}): Promise<Sandbox> {
    if (typeof template === "object") [template, opts] = [undefined, template];
    const client = SbxClient.from(opts);
    const req: api.CreateSandboxRequest = {};
    if (template) req.templateID = template;
    const t = seconds(opts.timeout);
    if (t) req.timeout = t;
    if (opts.waitReady) req.waitReady = true;
    if (opts.envVars) req.envVars = opts.envVars;
    if (opts.metadata) req.metadata = opts.metadata;
    if (opts.autoPause) req.autoPause = true;
    if (opts.cpu) req.cpu = opts.cpu;
    if (opts.memoryMB) req.memoryMB = opts.memoryMB;
    if (opts.diskMB) req.diskMB = opts.diskMB;
    if (opts.gpu) req.gpu = opts.gpu;
    if (opts.kind) req.kind = opts.kind;
    if (opts.preview) req.preview = opts.preview;
    if (opts.ports) req.ports = opts.ports;
    if (opts.egress) req.egress = opts.egress;
    if (opts.projectId) req.projectID = opts.projectId;
    if (opts.image) req.image = opts.image;
    if (opts.snapshotId) req.snapshotID = opts.snapshotId;
    if (opts.volumes) req.volumes = opts.volumes;
    if (opts.warmPool) req.warmPool = opts.warmPool;
    if (opts.provider) req.provider = opts.provider;
    const headers = { "Idempotency-Key": opts.idempotencyKey || uuid() };
    for (let attempt = 1; ; attempt++) {
      try {
        const data = await client.request<api.Sandbox>("POST", "/api/v1/sandboxes", { json: req, headers });
        return new Sandbox(client, data);
      } catch (err) {
        // Retry once, with the same key, when the connection failed before an answer.
        if (err instanceof SbxError || isAbort(err) || attempt >= 2) throw err;
      }
    }
  }

  /** connect reconnects to a sandbox by provider sandbox ID or UUID, resuming it when paused. */
  static async connect(sandboxId: string, opts: SandboxConnectOptions = {}): Promise<Sandbox> {
    const client = SbxClient.from(opts);
    return new Sandbox(client, await client.request<api.Sandbox>("POST", sandboxPath(sandboxId, "connect"), { json: connectRequest(opts) }));
  }

  /** list returns one page of the key's sandboxes, newest first. */
  static list(opts: ListSandboxesOptions & ConnectionOptions = {}): Promise<api.SandboxList> {
    return SbxClient.from(opts).listSandboxes(opts);
  }

  /** getInfo fetches a sandbox's data by provider sandbox ID or UUID. */
  static getInfo(sandboxId: string, opts: ConnectionOptions = {}): Promise<api.Sandbox> {
    return SbxClient.from(opts).getSandbox(sandboxId);
  }

  /** kill deletes a sandbox by provider sandbox ID or UUID. */
  static async kill(sandboxId: string, opts: ConnectionOptions = {}): Promise<api.Sandbox> {
    return SbxClient.from(opts).request("DELETE", sandboxPath(sandboxId));
  }

  /** The provider sandbox ID, the one `sbx sandbox` commands take. */
  get sandboxId(): string {
    return this.#data.sandboxID;
  }
  /** The sandbox's sbx UUID. */
  get id(): string {
    return this.#data.id;
  }
  /** The sandbox as the server last answered it. */
  get data(): api.Sandbox {
    return this.#data;
  }
  /** Its state as last answered: starting, running, paused, killed or failed. */
  get state(): api.Sandbox["state"] {
    return this.#data.state;
  }
  /** The token that opens its private previews. */
  get trafficToken(): string | undefined {
    return this.#data.trafficToken;
  }

  async #act(method: string, sub: string[], json?: unknown): Promise<this> {
    this.#data = await this.client.request<api.Sandbox>(method, sandboxPath(this.id, ...sub), { json });
    return this;
  }

  /** getInfo fetches the sandbox afresh. */
  async getInfo(): Promise<api.Sandbox> {
    await this.#act("GET", []);
    return this.#data;
  }
  /** refreshInfo is getInfo. */
  refreshInfo(): Promise<api.Sandbox> {
    return this.getInfo();
  }
  /** isRunning fetches its state and says whether it runs. */
  async isRunning(): Promise<boolean> {
    return (await this.getInfo()).state === "running";
  }
  /** connect refreshes runtime access, resuming the sandbox when paused. */
  connect(opts: { timeout?: number; rotateAccessToken?: boolean } = {}): Promise<this> {
    return this.#act("POST", ["connect"], connectRequest(opts));
  }
  /** setTimeout sets the sandbox's timeout to this many seconds from now. */
  setTimeout(timeout: number): Promise<this> {
    return this.#act("POST", ["timeout"], { timeout: seconds(timeout) });
  }
  /** refresh keeps the sandbox alive at least this many seconds more (at most 3600; default its timeout). */
  refresh(duration?: number): Promise<this> {
    const d = seconds(duration);
    return this.#act("POST", ["refreshes"], d ? { duration: d } : {});
  }
  /** pause pauses the sandbox, frozen in memory. */
  pause(): Promise<this> {
    return this.#act("POST", ["pause"], {});
  }
  /** hibernate checkpoints the sandbox to disk and releases its memory; resume restores it. */
  hibernate(): Promise<this> {
    return this.#act("POST", ["pause"], { hibernate: true });
  }
  /** resume resumes the paused sandbox; timeout (seconds) replaces its timeout. */
  resume(opts: { timeout?: number } = {}): Promise<this> {
    const t = seconds(opts.timeout);
    return this.#act("POST", ["resume"], t ? { timeout: t } : {});
  }
  /** delete kills the sandbox; its row stays in the ledger. */
  delete(): Promise<this> {
    return this.#act("DELETE", []);
  }
  /** kill is delete. */
  kill(): Promise<this> {
    return this.delete();
  }
  /** setEgress replaces the sandbox's egress policy, at once. */
  setEgress(egress: api.Egress): Promise<this> {
    return this.#act("PUT", ["egress"], egress);
  }

  /** logs returns a page of the sandbox's log, oldest first. */
  logs(page: Page = {}): Promise<api.LogPage> {
    return this.client.request("GET", sandboxPath(this.id, "logs"), { query: { limit: page.limit, cursor: page.cursor } });
  }
  /**
   * followLogs yields the sandbox's whole log, then each line as it is
   * added, until the sandbox ends, abortSignal fires or the loop breaks.
   */
  async *followLogs(opts: { abortSignal?: AbortSignal } = {}): AsyncGenerator<api.LogLine, void, undefined> {
    const resp = await this.client.send("GET", sandboxPath(this.id, "logs", "stream"), { signal: opts.abortSignal });
    try {
      yield* ndjson<api.LogLine>(resp);
    } catch (err) {
      if (!isAbort(err)) throw err;
    }
  }
  /** metrics measures the running sandbox now. */
  metrics(): Promise<api.Metrics> {
    return this.client.request("GET", sandboxPath(this.id, "metrics"));
  }

  /** snapshot captures the sandbox, which goes on as it was, and answers the snapshot once it is ready. */
  snapshot(opts: SnapshotOptions = {}): Promise<api.Snapshot> {
    const req: api.CreateSnapshotRequest = {};
    if (opts.name) req.name = opts.name;
    if (opts.metadata) req.metadata = opts.metadata;
    if (opts.filesOnly) req.memory = false;
    return this.client.request("POST", sandboxPath(this.id, "snapshots"), { json: req });
  }
  /** fork makes count running children, each with the sandbox's memory, processes and files. */
  async fork(count = 1): Promise<{ children: Sandbox[]; errors: string[] }> {
    const res = await this.client.request<api.ForkResult>("POST", sandboxPath(this.id, "fork"), { json: { count } satisfies api.ForkRequest });
    return { children: res.children.map((d) => new Sandbox(this.client, d)), errors: res.errors };
  }

  /** getPreviewUrl is the preview URL of port at the sandbox's own host ({port}-{sandboxID}.{domain}). */
  getPreviewUrl(port: number): string {
    const tpl = this.#data.previewURL;
    if (!tpl) throw new Error(`sandbox ${this.sandboxId} has no preview URL (it is ${this.state})`);
    return tpl.replace("{port}", String(port));
  }
  /** getHost is the host of getPreviewUrl(port), as E2B's getHost. */
  getHost(port: number): string {
    return new URL(this.getPreviewUrl(port)).host;
  }
  /** getPreviewPathUrl is the preview of port through the server's own address: /api/v1/sandboxes/{id}/ports/{port}/. */
  getPreviewPathUrl(port: number, path = "/"): string {
    return this.client.url + sandboxPath(this.id, "ports", port) + (path.startsWith("/") ? path : "/" + path);
  }
  /** createPreviewLink makes a link to port that works without other credentials for ttl seconds (default an hour); its URL holds its token and is answered only now. */
  createPreviewLink(port: number, opts: { ttl?: number } = {}): Promise<api.PreviewLink> {
    const req: api.CreatePreviewLinkRequest = { port };
    const t = seconds(opts.ttl);
    if (t) req.expires = t;
    return this.client.request("POST", sandboxPath(this.id, "previews"), { json: req });
  }
  /** listPreviewLinks lists the sandbox's preview links, newest first, without their tokens. */
  async listPreviewLinks(): Promise<api.PreviewLink[]> {
    return (await this.client.request<api.PreviewLinkList>("GET", sandboxPath(this.id, "previews"))).items;
  }
  /** revokePreviewLink ends a preview link at once. */
  revokePreviewLink(linkId: string): Promise<api.PreviewLink> {
    return this.client.request("DELETE", sandboxPath(this.id, "previews", linkId));
  }

  /** runCode runs code in a code context (default: the language's default) and answers its Execution. */
  runCode(code: string, opts: RunCodeOptions = {}): Promise<Execution> {
    return this.code.run(code, opts);
  }
  /** createCodeContext makes a code context. */
  createCodeContext(opts: api.CreateCodeContextRequest = {}): Promise<api.CodeContext> {
    return this.code.createContext(opts);
  }
}

function connectRequest(opts: { timeout?: number; rotateAccessToken?: boolean }): api.ConnectRequest {
  const req: api.ConnectRequest = {};
  const t = seconds(opts.timeout);
  if (t) req.timeout = t;
  if (opts.rotateAccessToken) req.rotateAccessToken = true;
  return req;
}
