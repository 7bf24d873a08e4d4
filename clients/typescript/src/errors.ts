import type { ErrorCode, ErrorData, ErrorDataFor, GatewayMessage } from "./types.js";

/** Any answer of the HTTP API that is not a success. */
export class ApiError extends Error {
  override name = "ApiError";
  constructor(
    message: string,
    /** The HTTP status. */
    readonly status: number,
    /** The body as received (parsed JSON, or text when it was not JSON). */
    readonly body: unknown,
  ) {
    super(message);
  }
}

/**
 * A documented error answer of a function: the envelope
 * `{"resultCode", "msg", "data": {"error": <code>, ...details}}`.
 * Narrow a caught error with {@link isMatchmakingError} (which types `data`
 * for the code):
 *
 * ```ts
 * if (isMatchmakingError(e, "COOLING_DOWN")) wait(e.data.retryAfterSeconds);
 * ```
 */
export class MatchmakingError<C extends ErrorCode = ErrorCode> extends ApiError {
  override name = "MatchmakingError";
  /** The stable code (`data.error`). */
  readonly code: C;
  /** The code's details (`data`, including `error`). */
  readonly data: ErrorDataFor<C>;
  /** The server's message for humans (`msg`); it may change, programs read `code` and `data`. */
  readonly msg: string;

  constructor(status: number, msg: string, data: ErrorDataFor<C>, body: unknown) {
    super(`${status} ${data.error}: ${msg}`, status, body);
    this.code = data.error as C;
    this.data = data;
    this.msg = msg;
  }

  /** Whether this is the error `code` (and narrows `data` to that code's details). */
  is<K extends ErrorCode>(code: K): this is MatchmakingError<K> {
    return (this.code as ErrorCode) === code;
  }
}

/**
 * API Gateway's own answer, never a function's: 401 (no token, or one the
 * JWT authorizer refused), 404 (no such route), 429 (throttled), 500 (the
 * function failed). The body is `{"message": ...}`.
 */
export class GatewayError extends ApiError {
  override name = "GatewayError";
  readonly gatewayMessage: GatewayMessage["message"] | string;
  constructor(status: number, gatewayMessage: string, body: unknown) {
    super(`${status} ${gatewayMessage} (API Gateway)`, status, body);
    this.gatewayMessage = gatewayMessage;
  }
}

/**
 * Whether `e` is a documented error answer (with code `code`, if given),
 * typing `e.data` as that code's details. (`instanceof MatchmakingError`
 * alone cannot narrow `data`: TypeScript gives a generic class `any` there.)
 */
export function isMatchmakingError<C extends ErrorCode = ErrorCode>(e: unknown, code?: C): e is MatchmakingError<C> {
  return e instanceof MatchmakingError && (code === undefined || e.code === code);
}

/** The typed error of an answer, or `null` for a success. */
export function errorOf(status: number, body: unknown): ApiError | null {
  if (status >= 200 && status < 300) return null;
  if (isObject(body)) {
    const data = body["data"];
    if (typeof body["msg"] === "string" && isObject(data) && typeof data["error"] === "string") {
      return new MatchmakingError(status, body["msg"], data as ErrorData, body);
    }
    if (typeof body["message"] === "string") return new GatewayError(status, body["message"], body);
  }
  return new ApiError(`${status}: unexpected answer ${JSON.stringify(body)}`, status, body);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
