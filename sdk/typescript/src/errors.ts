import type { Error as ApiErrorBody, FieldError } from "./generated.js";

/** The `type` of the API's error envelope: sbx's error codes. */
export type ErrorType = ApiErrorBody["type"];

/**
 * SbxError is every answer the server refused: status is the HTTP status,
 * type the envelope's error type, detail the server's explanation and
 * errors the fields it found wrong. Each type has its own subclass
 * (NotFoundError, ConflictError, …), so `instanceof` picks them out.
 */
export class SbxError extends Error {
  /** The HTTP status of the answer. */
  readonly status: number;
  /** The API's error type, e.g. not_found. */
  readonly type: ErrorType;
  /** The server's explanation. */
  readonly detail: string;
  /** The fields of the request the server found wrong, if any. */
  readonly errors: FieldError[];

  constructor(status: number, type: ErrorType, detail: string, errors: FieldError[] = []) {
    super(detail);
    this.name = new.target.name;
    this.status = status;
    this.type = type;
    this.detail = detail;
    this.errors = errors;
  }
}

/** 400 invalid: bad input; errors names the fields. */
export class InvalidError extends SbxError {}
/** 413 too_large: a request body over the route's bound. */
export class TooLargeError extends SbxError {}
/** 415 unsupported_media_type. */
export class UnsupportedMediaTypeError extends SbxError {}
/** 401 unauthorized: no or a bad API key. */
export class UnauthorizedError extends SbxError {}
/** 403 forbidden: the key lacks the right. KycRequiredError and PlanLimitExceededError are 403s too. */
export class ForbiddenError extends SbxError {}
/** 403 kyc_required: the org or user must be verified first. */
export class KycRequiredError extends ForbiddenError {}
/** 403 plan_limit_exceeded: the org's plan does not allow it. */
export class PlanLimitExceededError extends ForbiddenError {}
/** 402 insufficient_credits: the org's balance is empty. */
export class InsufficientCreditsError extends SbxError {}
/** 405 method_not_allowed. */
export class MethodNotAllowedError extends SbxError {}
/** 404 not_found: no such thing visible to the key. */
export class NotFoundError extends SbxError {}
/** 507 insufficient_storage: the host's disk has no room. */
export class InsufficientStorageError extends SbxError {}
/** 422 idempotency_key_reused: an Idempotency-Key sent again with another request. */
export class IdempotencyKeyReusedError extends SbxError {}
/** 409 conflict: the current state forbids it (resume a running sandbox, pause a paused one, …). */
export class ConflictError extends SbxError {}
/** 501 not_supported: the provider cannot do it. */
export class NotSupportedError extends SbxError {}
/** 502 provider_error: the provider failed the operation. */
export class ProviderError extends SbxError {}
/** 503 unavailable: a dependency is missing or down. */
export class UnavailableError extends SbxError {}
/** 503 warm_pool_unavailable: a create that requires the warm pool found no member ready. */
export class WarmPoolUnavailableError extends UnavailableError {}
/** 504 timeout: a bounded wait ran out. */
export class TimeoutError extends SbxError {}
/** 500 internal: a bug or an unexpected failure. */
export class InternalError extends SbxError {}

/** The class of each error type. */
export const errorClasses: Record<ErrorType, typeof SbxError> = {
  invalid: InvalidError,
  too_large: TooLargeError,
  unsupported_media_type: UnsupportedMediaTypeError,
  unauthorized: UnauthorizedError,
  forbidden: ForbiddenError,
  kyc_required: KycRequiredError,
  plan_limit_exceeded: PlanLimitExceededError,
  insufficient_credits: InsufficientCreditsError,
  method_not_allowed: MethodNotAllowedError,
  not_found: NotFoundError,
  insufficient_storage: InsufficientStorageError,
  idempotency_key_reused: IdempotencyKeyReusedError,
  warm_pool_unavailable: WarmPoolUnavailableError,
  conflict: ConflictError,
  not_supported: NotSupportedError,
  provider_error: ProviderError,
  unavailable: UnavailableError,
  timeout: TimeoutError,
  internal: InternalError,
};

const statusTypes: Record<number, ErrorType> = {
  400: "invalid", 401: "unauthorized", 402: "insufficient_credits", 403: "forbidden", 404: "not_found",
  405: "method_not_allowed", 409: "conflict", 413: "too_large", 415: "unsupported_media_type",
  422: "idempotency_key_reused", 500: "internal", 501: "not_supported", 502: "provider_error",
  503: "unavailable", 504: "timeout", 507: "insufficient_storage",
};

/** errorFromBody makes the typed error of a refused answer's status and body text. */
export function errorFromBody(status: number, statusText: string, text: string): SbxError {
  let env: Partial<ApiErrorBody> | undefined;
  try {
    env = JSON.parse(text);
  } catch {}
  if (env && typeof env === "object" && typeof env.detail === "string" && env.detail !== "") {
    const type = (env.type && env.type in errorClasses ? env.type : statusTypes[status] ?? "internal") as ErrorType;
    return new errorClasses[type](env.code || status, type, env.detail, Array.isArray(env.errors) ? env.errors : []);
  }
  const type = statusTypes[status] ?? (status >= 500 ? "internal" : "invalid");
  const trimmed = text.trim();
  return new errorClasses[type](status, type, `${status} ${statusText}${trimmed ? ": " + trimmed : ""}`);
}

/** errorFromResponse reads a refused answer into its typed error. */
export async function errorFromResponse(resp: Response): Promise<SbxError> {
  let text = "";
  try {
    text = await resp.text();
  } catch {}
  return errorFromBody(resp.status, resp.statusText, text.slice(0, 64 << 10));
}

/**
 * SandboxStoppedError ends a stream (a command's output, a terminal, a
 * watch) whose sandbox stopped running first; reason is the server's word
 * for why, e.g. "sandbox sbx-… was deleted".
 */
export class SandboxStoppedError extends Error {
  readonly reason: string;
  constructor(reason: string) {
    super(reason);
    this.name = "SandboxStoppedError";
    this.reason = reason;
  }
}

/** StreamEndedError is a stream that ended before what it followed did. */
export class StreamEndedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "StreamEndedError";
  }
}
