import type { CodeContext, CodeContextList, CodeEvent, CreateCodeContextRequest, ExecuteCodeRequest } from "./generated.js";
import { SbxClient, sandboxPath } from "./client.js";
import { SandboxStoppedError } from "./errors.js";
import { ndjson, seconds } from "./stream.js";

/** The optional parts of running code. */
export interface RunCodeOptions {
  /** The context to run in (a CodeContext or its ID); default the language's default context. */
  context?: CodeContext | string;
  /** Without context: python (default), bash or javascript. */
  language?: ExecuteCodeRequest["language"];
  /** Seconds after which the run is interrupted (the context lives on). */
  timeout?: number;
  onStdout?: (text: string) => void;
  onStderr?: (text: string) => void;
  onResult?: (result: Result) => void;
  onError?: (error: ExecutionError) => void;
  onEnd?: (end: CodeEvent) => void;
  abortSignal?: AbortSignal;
}

/** Result is one result of a run: a MIME bundle; isMainResult marks the last expression's value. */
export class Result {
  readonly isMainResult: boolean;
  /** Every MIME type the interpreter gave. */
  readonly data: Record<string, unknown>;
  constructor(ev: CodeEvent) {
    this.isMainResult = !!ev.isMainResult;
    this.data = ev.data ?? {};
  }
  #s(mime: string): string | undefined {
    const v = this.data[mime];
    return typeof v === "string" ? v : undefined;
  }
  /** text/plain. */
  get text(): string | undefined { return this.#s("text/plain"); }
  /** text/html. */
  get html(): string | undefined { return this.#s("text/html"); }
  /** image/png, base64. */
  get png(): string | undefined { return this.#s("image/png"); }
  /** image/jpeg, base64. */
  get jpeg(): string | undefined { return this.#s("image/jpeg"); }
  /** image/svg+xml. */
  get svg(): string | undefined { return this.#s("image/svg+xml"); }
  /** text/markdown. */
  get markdown(): string | undefined { return this.#s("text/markdown"); }
  /** text/latex. */
  get latex(): string | undefined { return this.#s("text/latex"); }
  /** application/json. */
  get json(): unknown { return this.data["application/json"]; }
  /** formats lists the MIME types it has. */
  formats(): string[] { return Object.keys(this.data); }
}

/** ExecutionError is the error a run raised. */
export interface ExecutionError {
  /** Its name, e.g. ZeroDivisionError. */
  name: string;
  /** Its message. */
  value: string;
  traceback: string[];
}

/** Execution is what a run gave: its output, results and error, and its end. */
export class Execution {
  stdout = "";
  stderr = "";
  readonly results: Result[] = [];
  error?: ExecutionError;
  /** The end: status, context, execution count, duration. */
  end?: CodeEvent;
  /** The text/plain of the last expression's value, if any. */
  get text(): string | undefined {
    return this.results.find((r) => r.isMainResult)?.text;
  }
  /** E2B's shape: the output as lists of chunks. */
  readonly logs = { stdout: [] as string[], stderr: [] as string[] };
}

/** Code runs code in a sandbox's code contexts: stateful interpreters whose variables, imports and directory persist. */
export class Code {
  constructor(readonly client: SbxClient, readonly sandboxId: string) {}

  /** run runs code and follows it to its end. */
  async run(code: string, opts: RunCodeOptions = {}): Promise<Execution> {
    const req: ExecuteCodeRequest = { code };
    const ctx = typeof opts.context === "string" ? opts.context : opts.context?.id;
    if (ctx) req.contextId = ctx;
    else if (opts.language) req.language = opts.language;
    const t = seconds(opts.timeout);
    if (t) req.timeout = t;
    const resp = await this.client.send("POST", sandboxPath(this.sandboxId, "code", "execute"), { json: req, signal: opts.abortSignal });
    const ex = new Execution();
    for await (const ev of ndjson<CodeEvent & { error?: string }>(resp)) {
      switch (ev.type) {
        case "stdout":
          ex.stdout += ev.text ?? "";
          ex.logs.stdout.push(ev.text ?? "");
          opts.onStdout?.(ev.text ?? "");
          break;
        case "stderr":
          ex.stderr += ev.text ?? "";
          ex.logs.stderr.push(ev.text ?? "");
          opts.onStderr?.(ev.text ?? "");
          break;
        case "result": {
          const r = new Result(ev);
          ex.results.push(r);
          opts.onResult?.(r);
          break;
        }
        case "error":
          if (!ev.name && typeof ev.error === "string") throw new SandboxStoppedError(ev.error);
          ex.error = { name: ev.name ?? "", value: ev.value ?? "", traceback: ev.traceback ?? [] };
          opts.onError?.(ex.error);
          break;
        case "end":
          ex.end = ev;
          opts.onEnd?.(ev);
          break;
      }
    }
    return ex;
  }

  /** createContext makes a code context (its interpreter starts with its first run). */
  createContext(opts: CreateCodeContextRequest = {}): Promise<CodeContext> {
    return this.client.request("POST", sandboxPath(this.sandboxId, "code", "contexts"), { json: opts });
  }
  /** listContexts lists the sandbox's code contexts. */
  async listContexts(): Promise<CodeContext[]> {
    return (await this.client.request<CodeContextList>("GET", sandboxPath(this.sandboxId, "code", "contexts"))).items;
  }
  /** deleteContext deletes a code context: its interpreter ends. */
  async deleteContext(context: CodeContext | string): Promise<void> {
    await this.client.call("deleteCodeContext", { path: { id: this.sandboxId, ctx: idOf(context) } });
  }
  /** restartContext gives a code context a new interpreter, its state gone. */
  restartContext(context: CodeContext | string): Promise<CodeContext> {
    return this.client.request("POST", sandboxPath(this.sandboxId, "code", "contexts", idOf(context), "restart"));
  }
  /** interrupt interrupts what a code context runs; it lives on. */
  async interrupt(context: CodeContext | string): Promise<void> {
    await this.client.call("interruptCodeContext", { path: { id: this.sandboxId, ctx: idOf(context) } });
  }
}

const idOf = (c: CodeContext | string) => (typeof c === "string" ? c : c.id);
