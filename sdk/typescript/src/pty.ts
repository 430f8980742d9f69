import type { CommandInfo, StartPtyRequest } from "./generated.js";

/** A text message on a PTY's WebSocket: resize from the client, exit from the agent. */
export interface PtyControl {
  type: "resize" | "exit";
  cols?: number;
  rows?: number;
  exitCode?: number;
  signal?: string;
}
import { SbxClient, sandboxPath, type WebSocketLike } from "./client.js";
import { SandboxStoppedError, errorFromBody } from "./errors.js";
import type { CommandResult } from "./commands.js";
import { DisconnectedError } from "./commands.js";

/** The WebSocket subprotocol of a PTY. */
export const PtyProtocol = "sbx.pty";
/** A WebSocket subprotocol carrying the API key, for platforms whose WebSocket cannot set headers. */
export const KeyProtocolPrefix = "sbx.key.";

/** A terminal to create; the default is a login shell on an 80x24 terminal. */
export interface PtyOptions {
  cols?: number;
  rows?: number;
  /** A command line; default a login shell. */
  cmd?: string;
  envs?: Record<string, string>;
  /** Default /workspace. */
  cwd?: string;
  user?: string;
  /** A name to find it by. */
  tag?: string;
  /** The terminal's output as it comes, in order. */
  onData?: (data: Uint8Array) => void;
}

/**
 * Pty runs interactive terminals in a sandbox over a WebSocket: binary
 * messages carry output and input, text messages PtyControl (resize in,
 * exit out). The API key travels as the subprotocol sbx.key.<key> beside
 * sbx.pty, which works with every WebSocket, browsers' included. A PTY is a
 * command with a terminal: commands.list, signal and kill reach it too.
 */
export class Pty {
  constructor(readonly client: SbxClient, readonly sandboxId: string) {}

  /** create starts a terminal and connects to it. */
  async create(opts: PtyOptions = {}): Promise<PtyHandle> {
    const req: StartPtyRequest = { cols: opts.cols ?? 80, rows: opts.rows ?? 24 };
    if (opts.cmd) req.cmd = opts.cmd;
    if (opts.envs) req.env = opts.envs;
    if (opts.cwd) req.cwd = opts.cwd;
    if (opts.user) req.user = opts.user;
    if (opts.tag) req.tag = opts.tag;
    const WS = this.client.webSocket(); // fail before starting anything
    const info = await this.client.request<CommandInfo>("POST", sandboxPath(this.sandboxId, "pty"), { json: req });
    try {
      return await this.#connect(WS, info, opts.onData);
    } catch (err) {
      await this.kill(info.pid).catch(() => {});
      throw err;
    }
  }

  /** connect connects to a running terminal by PID or tag: onData gets what it buffered, then its output live. */
  async connect(ref: string | number, opts: { onData?: (data: Uint8Array) => void } = {}): Promise<PtyHandle> {
    const WS = this.client.webSocket();
    const info = await this.client.request<CommandInfo>("GET", sandboxPath(this.sandboxId, "commands", ref));
    return this.#connect(WS, info, opts.onData);
  }

  /** resize sets a terminal's size. */
  async resize(ref: string | number, size: { cols: number; rows: number }): Promise<void> {
    await this.client.request("POST", sandboxPath(this.sandboxId, "pty", ref, "resize"), { json: { cols: size.cols, rows: size.rows } });
  }

  /** sendInput types data into a terminal, without a connection to it. */
  async sendInput(ref: string | number, data: string | Uint8Array): Promise<void> {
    const body = (typeof data === "string" ? new TextEncoder().encode(data) : data) as BodyInit;
    const resp = await this.client.send("POST", sandboxPath(this.sandboxId, "commands", ref, "stdin"), { body, contentType: "application/octet-stream" });
    await resp.body?.cancel();
  }

  /** kill sends SIGKILL to a terminal's process group. */
  kill(ref: string | number): Promise<CommandInfo> {
    return this.client.request("DELETE", sandboxPath(this.sandboxId, "commands", ref));
  }

  #connect(WS: ReturnType<SbxClient["webSocket"]>, info: CommandInfo, onData?: (d: Uint8Array) => void): Promise<PtyHandle> {
    const url = this.client.target(sandboxPath(this.sandboxId, "pty", info.pid)).replace(/^http/, "ws");
    const protocols = [PtyProtocol];
    if (this.client.apiKey) protocols.push(KeyProtocolPrefix + this.client.apiKey);
    const ws = new WS(url, protocols);
    ws.binaryType = "arraybuffer";
    return new Promise((resolve, reject) => {
      let opened = false;
      ws.addEventListener("open", () => {
        opened = true;
        resolve(new PtyHandle(this, ws, info, onData));
      });
      ws.addEventListener("error", (ev: any) => {
        if (opened) return;
        // A refused upgrade: the ws package passes the answer's status in its message.
        const msg = String(ev?.message ?? ev?.error?.message ?? "");
        const m = /Unexpected server response: (\d+)/.exec(msg);
        reject(m ? errorFromBody(Number(m[1]), "", msg) : new Error(`terminal ${info.pid}: the WebSocket failed: ${msg || "connection error"}`));
      });
    });
  }
}

/** PtyHandle is a connection to a terminal. */
export class PtyHandle {
  readonly #pty: Pty;
  readonly #ws: WebSocketLike;
  readonly #done: Promise<CommandResult>;
  #disconnected = false;
  /** The terminal's command as it was when connected. */
  readonly info: CommandInfo;

  constructor(pty: Pty, ws: WebSocketLike, info: CommandInfo, onData?: (d: Uint8Array) => void) {
    this.#pty = pty;
    this.#ws = ws;
    this.info = info;
    this.#done = new Promise((resolve, reject) => {
      let result: CommandResult | undefined;
      ws.addEventListener("message", (ev: { data: unknown }) => {
        const data = ev.data;
        if (typeof data === "string") {
          let msg: PtyControl;
          try {
            msg = JSON.parse(data);
          } catch {
            return reject(new Error(`terminal ${info.pid}: a bad control message: ${data}`));
          }
          if (msg.type === "exit") {
            result = { pid: info.pid, stdout: "", stderr: "", exitCode: msg.exitCode ?? -1 };
            if (msg.signal) result.signal = msg.signal;
            ws.close(1000);
          }
          return;
        }
        if (onData) onData(data instanceof ArrayBuffer ? new Uint8Array(data) : new Uint8Array(data as ArrayBufferLike));
      });
      ws.addEventListener("close", (ev: { code: number; reason: string }) => {
        if (result) return resolve(result);
        if (this.#disconnected) return reject(new DisconnectedError(`terminal ${info.pid}`));
        if (ev.code === 1001) return reject(new SandboxStoppedError(String(ev.reason || "the sandbox stopped")));
        reject(new Error(`terminal ${info.pid}: the connection ended before the terminal exited (${ev.code} ${ev.reason ?? ""})`));
      });
    });
    this.#done.catch(() => {});
  }

  /** The process ID of the terminal's command. */
  get pid(): number {
    return this.info.pid;
  }
  /** sendInput types data into the terminal. */
  sendInput(data: string | Uint8Array): void {
    this.#ws.send(typeof data === "string" ? new TextEncoder().encode(data) : data);
  }
  /** resize sets the terminal's size. */
  resize(size: { cols: number; rows: number }): void {
    const msg: PtyControl = { type: "resize", cols: size.cols, rows: size.rows };
    this.#ws.send(JSON.stringify(msg));
  }
  /** wait waits for the terminal to exit and says how. */
  wait(): Promise<CommandResult> {
    return this.#done;
  }
  /** disconnect closes the connection; the terminal goes on running. */
  disconnect(): void {
    this.#disconnected = true;
    this.#ws.close(1000);
  }
  /** kill sends SIGKILL to the terminal's process group. */
  kill(): Promise<CommandInfo> {
    return this.#pty.kill(this.pid);
  }
}
