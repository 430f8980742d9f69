import type { CommandEvent, CommandInfo, CommandList, StartCommandRequest } from "./generated.js";
import { SbxClient, sandboxPath } from "./client.js";
import { SandboxStoppedError, StreamEndedError } from "./errors.js";
import { fromBase64, isAbort, ndjson, seconds } from "./stream.js";

/** The optional parts of running a command. */
export interface CommandOptions {
  /** Added to the sandbox's environment. */
  envs?: Record<string, string>;
  /** Default /workspace. */
  cwd?: string;
  /** A user name or UID; default the template's default user (user in base), else root. */
  user?: string;
  /** A name to find it by (commands.connect, kill, …), unique among running commands. */
  tag?: string;
  /** Seconds after which its process group is killed; default never. */
  timeout?: number;
  /** Keep stdin open for sendStdin until closeStdin; default: empty stdin. */
  stdin?: boolean;
  /** Each chunk of stdout as it comes, decoded as UTF-8 (raw holds its bytes). */
  onStdout?: (data: string, raw: Uint8Array) => void;
  /** Each chunk of stderr as it comes. */
  onStderr?: (data: string, raw: Uint8Array) => void;
  /** Keep the output out of the result, for output the callbacks consume. */
  discardOutput?: boolean;
  /** Aborting stops a foreground run and kills the command; for a background one it stops following. */
  abortSignal?: AbortSignal;
}

/** How a command ended, with its output. A non-zero exit is no error. */
export interface CommandResult {
  pid: number;
  stdout: string;
  stderr: string;
  /** The exit status; -1 when a signal killed it. */
  exitCode: number;
  /** The signal that killed it, e.g. KILL. */
  signal?: string;
  /** Why it ended other than by exiting, e.g. a timeout. */
  error?: string;
}

/** Options of following a command that already runs. */
export type FollowOptions = Pick<CommandOptions, "onStdout" | "onStderr" | "discardOutput" | "abortSignal">;

/** Output gathers a command's stream into its result. */
class Output {
  readonly res: CommandResult;
  ended = false;
  #out: string[] = [];
  #err: string[] = [];
  #decOut = new TextDecoder();
  #decErr = new TextDecoder();
  constructor(readonly opts: FollowOptions | undefined, pid: number) {
    this.res = { pid, stdout: "", stderr: "", exitCode: -1 };
  }
  get stdout(): string {
    return this.#out.join("");
  }
  get stderr(): string {
    return this.#err.join("");
  }
  /** follow reads the stream to its end event. */
  async follow(resp: Response): Promise<CommandResult> {
    for await (const e of ndjson<CommandEvent>(resp)) {
      switch (e.type) {
        case "start":
          this.res.pid = e.pid ?? this.res.pid;
          break;
        case "stdout":
        case "stderr": {
          const raw = e.data ? fromBase64(e.data) : new Uint8Array();
          const out = e.type === "stdout";
          const text = (out ? this.#decOut : this.#decErr).decode(raw, { stream: true });
          if (!this.opts?.discardOutput) (out ? this.#out : this.#err).push(text);
          const fn = out ? this.opts?.onStdout : this.opts?.onStderr;
          if (fn) fn(text, raw);
          break;
        }
        case "error":
          throw new SandboxStoppedError(e.error ?? "the sandbox stopped");
        case "end":
          this.ended = true;
          this.res.exitCode = e.exitCode ?? -1;
          if (e.signal) this.res.signal = e.signal;
          if (e.error) this.res.error = e.error;
          this.res.stdout = this.stdout;
          this.res.stderr = this.stderr;
          return this.res;
      }
    }
    throw new StreamEndedError(`command ${this.res.pid}: the stream ended before the command did`);
  }
}

/**
 * Commands runs and controls processes in a sandbox, through its agent.
 * Commands and PTYs are found by ref: a PID, or the tag they started with.
 *
 *     const res = await sandbox.commands.run("make test", { cwd: "/workspace/app", onStdout: (d) => process.stdout.write(d) });
 *     console.log(res.exitCode);
 */
export class Commands {
  constructor(readonly client: SbxClient, readonly sandboxId: string) {}

  #path(...sub: (string | number)[]): string {
    return sandboxPath(this.sandboxId, "commands", ...sub);
  }

  /**
   * run runs a command line with bash -l -c (or an argv, found on PATH) and
   * waits for it to end, streaming its output to the callbacks; with
   * `background: true` it answers a CommandHandle once the command runs.
   */
  run(cmd: string | string[], opts: CommandOptions & { background: true }): Promise<CommandHandle>;
  run(cmd: string | string[], opts?: CommandOptions & { background?: false }): Promise<CommandResult>;
  run(cmd: string | string[], opts: CommandOptions & { background?: boolean } = {}): Promise<CommandResult | CommandHandle> {
    if (opts.background) return this.start(cmd, opts);
    return this.#run(cmd, opts);
  }

  async #run(cmd: string | string[], opts: CommandOptions): Promise<CommandResult> {
    const resp = await this.client.send("POST", this.#path(), { json: request(cmd, opts), signal: opts.abortSignal });
    const out = new Output(opts, 0);
    try {
      return await out.follow(resp);
    } catch (err) {
      if (opts.abortSignal?.aborted && out.res.pid) await this.kill(out.res.pid).catch(() => {});
      throw err;
    }
  }

  /** start starts a command in the background and follows its output; it answers once the command runs. */
  async start(cmd: string | string[], opts: CommandOptions = {}): Promise<CommandHandle> {
    const info = await this.client.request<CommandInfo>("POST", this.#path(), { json: { ...request(cmd, opts), background: true } });
    try {
      return await this.#follow(info, opts);
    } catch (err) {
      await this.kill(info.pid).catch(() => {});
      throw err;
    }
  }

  /** connect follows a running or recently ended command by PID or tag: its output so far, then live. */
  async connect(ref: string | number, opts: FollowOptions = {}): Promise<CommandHandle> {
    return this.#follow(await this.get(ref), opts);
  }

  /** list lists the running commands and PTYs, and the recently ended ones. */
  async list(): Promise<CommandInfo[]> {
    return (await this.client.request<CommandList>("GET", this.#path())).items;
  }

  /** get describes one command or PTY. */
  get(ref: string | number): Promise<CommandInfo> {
    return this.client.request("GET", this.#path(ref));
  }

  /** kill sends SIGKILL to the whole process group of a command or PTY. */
  async kill(ref: string | number): Promise<CommandInfo> {
    return this.client.request("DELETE", this.#path(ref));
  }

  /** signal sends a signal, named without SIG (TERM, INT, HUP, …) or by number. */
  signal(ref: string | number, signal: string | number): Promise<CommandInfo> {
    return this.client.request("POST", this.#path(ref, "signal"), { json: { signal: String(signal) } });
  }

  /** sendStdin writes data to the stdin of a command started with stdin: true, or to a PTY's terminal. */
  async sendStdin(ref: string | number, data: string | Uint8Array): Promise<void> {
    const body = (typeof data === "string" ? new TextEncoder().encode(data) : data) as BodyInit;
    const resp = await this.client.send("POST", this.#path(ref, "stdin"), { body, contentType: "application/octet-stream" });
    await resp.body?.cancel();
  }

  /** closeStdin closes a command's stdin: it reads end of file. */
  async closeStdin(ref: string | number): Promise<void> {
    const resp = await this.client.send("DELETE", this.#path(ref, "stdin"));
    await resp.body?.cancel();
  }

  async #follow(info: CommandInfo, opts: FollowOptions): Promise<CommandHandle> {
    const abort = new AbortController();
    const outer = opts.abortSignal;
    const onAbort = () => abort.abort(outer?.reason);
    if (outer) {
      if (outer.aborted) onAbort();
      else outer.addEventListener("abort", onAbort, { once: true });
    }
    const resp = await this.client.send("GET", this.#path(info.pid, "stream"), { signal: abort.signal });
    return new CommandHandle(this, info, resp, abort, opts);
  }
}

/** Why wait fails after disconnect. */
export class DisconnectedError extends Error {
  constructor(what: string) {
    super(`disconnected from ${what}`);
    this.name = "DisconnectedError";
  }
}

/** CommandHandle follows a command started in the background or found by connect. */
export class CommandHandle {
  readonly #cmds: Commands;
  readonly #abort: AbortController;
  readonly #out: Output;
  readonly #done: Promise<CommandResult>;
  #disconnected = false;
  /** The command as it was when followed. */
  readonly info: CommandInfo;

  constructor(cmds: Commands, info: CommandInfo, resp: Response, abort: AbortController, opts: FollowOptions) {
    this.#cmds = cmds;
    this.info = info;
    this.#abort = abort;
    this.#out = new Output(opts, info.pid);
    this.#done = this.#out.follow(resp).catch((err) => {
      if (this.#disconnected) throw new DisconnectedError(`command ${info.pid}`);
      if (isAbort(err)) throw new DisconnectedError(`command ${info.pid} (aborted)`);
      throw err;
    });
    this.#done.catch(() => {}); // wait() reports it
  }

  /** The command's process ID in the sandbox. */
  get pid(): number {
    return this.info.pid;
  }
  /** The command's tag, if any. */
  get tag(): string | undefined {
    return this.info.tag;
  }
  /** The stdout received so far. */
  get stdout(): string {
    return this.#out.stdout;
  }
  /** The stderr received so far. */
  get stderr(): string {
    return this.#out.stderr;
  }

  /** wait waits for the command to end; it fails when the stream breaks first or after disconnect. */
  wait(): Promise<CommandResult> {
    return this.#done;
  }
  /** disconnect stops following; the command goes on running. */
  disconnect(): void {
    this.#disconnected = true;
    this.#abort.abort();
  }
  /** kill sends SIGKILL to the command's process group. */
  kill(): Promise<CommandInfo> {
    return this.#cmds.kill(this.pid);
  }
  /** signal sends the command a signal, named without SIG or by number. */
  signal(signal: string | number): Promise<CommandInfo> {
    return this.#cmds.signal(this.pid, signal);
  }
  /** sendStdin writes to the command's stdin; it must have started with stdin: true. */
  sendStdin(data: string | Uint8Array): Promise<void> {
    return this.#cmds.sendStdin(this.pid, data);
  }
  /** closeStdin closes the command's stdin. */
  closeStdin(): Promise<void> {
    return this.#cmds.closeStdin(this.pid);
  }
}

function request(cmd: string | string[], opts: CommandOptions): StartCommandRequest {
  const req: StartCommandRequest = Array.isArray(cmd) ? { args: cmd } : { cmd };
  if (opts.envs) req.env = opts.envs;
  if (opts.cwd) req.cwd = opts.cwd;
  if (opts.user) req.user = opts.user;
  if (opts.tag) req.tag = opts.tag;
  const t = seconds(opts.timeout);
  if (t) req.timeout = t;
  if (opts.stdin) req.stdin = true;
  return req;
}
