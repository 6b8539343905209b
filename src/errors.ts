/**
 * Typed errors. The database raises Baton's own SQLSTATE codes (BT001…); PostgREST and Postgres add a
 * few of their own. Callers branch on `code` or on the class, never on message text.
 */

export interface ErrorContext {
  code: string;
  message: string;
  details?: string | null;
  hint?: string | null;
}

export class BatonError extends Error {
  readonly code: string;
  readonly details: string | null;
  readonly hint: string | null;

  constructor(context: ErrorContext) {
    super(context.message);
    this.name = new.target.name;
    this.code = context.code;
    this.details = context.details ?? null;
    this.hint = context.hint ?? null;
  }

  toJSON() {
    return { name: this.name, code: this.code, message: this.message, details: this.details, hint: this.hint };
  }
}

/** The task, agent or message does not exist, or the caller may not see it. */
export class NotFoundError extends BatonError {}
/** The caller may see the thing but not do this to it. */
export class ForbiddenError extends BatonError {}
/** The status change is not one the task's current status allows. */
export class InvalidTransitionError extends BatonError {}
/** Another agent already holds the task. */
export class AlreadyClaimedError extends BatonError {}
/** The input breaks a rule: empty title, oversized payload, unknown priority, … */
export class ValidationError extends BatonError {}
/** No usable credentials: missing, malformed, expired or revoked token. */
export class UnauthorizedError extends BatonError {}
/** The claim token presented is no longer the task's current claim (fenced off). */
export class StaleClaimError extends BatonError {}
/** The agent already holds as many tasks as its max_concurrent allows. */
export class CapacityError extends BatonError {}
/** Handing off would make the chain deeper than the loop guard allows. */
export class ChainTooDeepError extends BatonError {}
/** The thing already exists. */
export class ConflictError extends BatonError {}
/** The addressee is offline and the caller did not ask to queue anyway. */
export class AgentOfflineError extends BatonError {}
/** Completing was refused: required expected outputs are not attached. */
export class MissingOutputsError extends BatonError {}
/** An artifact's content does not match its recorded SHA-256. */
export class IntegrityError extends BatonError {}
/**
 * An artifact does not satisfy the json_schema its task expects (BT019); `problems` lists each, with
 * its JSON Pointer, as the database's detail says them.
 */
export class OutputSchemaError extends BatonError {
  readonly problems: Array<{ path: string; message: string }>;
  constructor(context: ErrorContext & { problems?: Array<{ path: string; message: string }> }) {
    super(context);
    this.problems = context.problems ?? problemsIn(context.details);
  }
}

/** The problems a BT019's detail lists as JSON, or none where it holds something else. */
function problemsIn(details: string | null | undefined): Array<{ path: string; message: string }> {
  try {
    const listed = JSON.parse(details ?? '[]') as unknown;
    return Array.isArray(listed) ? listed.filter((p): p is { path: string; message: string } => typeof p?.path === 'string' && typeof p?.message === 'string') : [];
  } catch {
    return [];
  }
}
/** The agent reached one of its quotas (hand-offs, messages or artifacts per minute, open tasks); the hint says when to retry. */
export class QuotaError extends BatonError {}
/** The task is backing off after a failure (not_before); the hint says when it may be claimed. */
export class BackoffError extends BatonError {}
/** A task waits for tasks it depends on, or would depend on one that already failed. */
export class DependencyError extends BatonError {}
/** A later process started as the same agent and took over its claims; this one should stop. */
export class SupersededError extends BatonError {}
/** The budget over a task's chain is spent (nothing under it is claimed or started), or a budget asked for is more than is left above it. */
export class BudgetError extends BatonError {}
/** The agent reached its daily cap of spend: it takes no work until the next UTC midnight. */
export class SpendCapError extends BatonError {}
/** A task id prefix matches more than one task. */
export class AmbiguousIdError extends BatonError {}
/**
 * The API or its database is not there now: the request never reached the database, or the database
 * went away under it (restarting, crashed, refusing connections). Nothing was decided; the same call
 * may be made again, and a daemon does so with backoff.
 */
export class ConnectionError extends BatonError {}
/**
 * The database answered, but undid the call for now: a deadlock, a serialization failure, or a lock it
 * could not take in time. Nothing was decided; the same call may be made again, and a daemon does so.
 */
export class TransientError extends BatonError {}

/**
 * The API answered, but not with what this client reads: the database's schema and this client are of
 * different versions (migrations not applied yet, or an older client), or the URL is not a Baton API.
 * What was asked may have been done; the answer could not be read.
 */
export class UnreadableAnswerError extends BatonError {}

type ErrorClass = new (context: ErrorContext) => BatonError;

/** What one of Baton's codes means to the code that meets it. */
export interface BatonCode {
  /** The class a refusal with this code is raised as, everywhere. */
  error: ErrorClass;
  /** The HTTP status a surface that speaks HTTP (the board) answers it with. */
  http: 400 | 403 | 404 | 409 | 429;
  /**
   * Said of a claim's report (complete, fail, progress…): the claim is no longer the reporter's (the task
   * moved on, went away, or another process holds it), so a daemon stops that run and reports nothing more.
   */
  fenced: boolean;
  /** The same call may go through later, unchanged (a quota, a backoff, capacity): the hint says when. */
  later: boolean;
  /** What it means, as docs/security.md's table says it (test/codes.test.ts holds the two together). */
  means: string;
}

const code = (error: ErrorClass, http: BatonCode['http'], means: string, { fenced = false, later = false } = {}): BatonCode =>
  ({ error, http, fenced, later, means });

/**
 * Baton's own codes, raised by the SQL functions and triggers: the one list. test/codes.test.ts checks
 * it against every code the schema raises and against docs/security.md's table.
 */
export const batonCodes = {
  BT001: code(InvalidTransitionError, 409, 'the task\'s status does not allow this (the message names both states)', { fenced: true }),
  BT002: code(NotFoundError, 404, 'no such task or agent, or not one the caller may see', { fenced: true }),
  BT003: code(ForbiddenError, 403, 'visible, but the caller may not do this (not the sender, holder or addressee)', { fenced: true }),
  BT004: code(AlreadyClaimedError, 409, 'another agent holds the task'),
  BT005: code(ValidationError, 400, 'bad input: empty title, oversized payload, invalid capability, …'),
  BT006: code(UnauthorizedError, 403, 'no agent identity, or a token revoked, expired or never issued'),
  BT007: code(StaleClaimError, 409, 'the claim token is not the task\'s current claim, or the claim is another process\'s', { fenced: true }),
  BT008: code(CapacityError, 409, 'the agent already holds `max_concurrent` tasks', { later: true }),
  BT009: code(ChainTooDeepError, 409, 'the hand-off would exceed the chain depth limit'),
  BT010: code(ConflictError, 409, 'already exists (e.g. an agent id)'),
  BT011: code(AgentOfflineError, 409, 'the addressee is offline and the hand-off asked to be refused then (`--online-only`, `allow_offline: false`)'),
  BT012: code(MissingOutputsError, 409, 'completing a task whose required expected outputs are not attached (the message lists them)'),
  BT013: code(QuotaError, 429, 'the agent reached a quota (hand-offs, messages or artifacts per minute, open tasks); the hint says when to retry', { later: true }),
  BT014: code(BackoffError, 409, 'the task is not claimable yet: scheduled for later (`run_at`), or backing off after a failed attempt; the hint says when', { later: true }),
  BT015: code(DependencyError, 409, 'the task waits for tasks it depends on, or would depend on one that already failed (the hint names them)'),
  BT016: code(SupersededError, 409, 'a heartbeat or claim from a process that a later process of the same agent superseded (`begin_incarnation`)'),
  BT017: code(BudgetError, 409, 'the budget over the task\'s chain is spent: nothing under it is claimed or started (the hint names the task whose sender can raise it); or a budget asked for is more than is left above it ([budgets.md](budgets.md))'),
  BT018: code(SpendCapError, 409, 'the agent reached its daily cap of spend, its own runs and those of the tasks it handed on (`agents.daily_token_cap`, `daily_usd_cap`): it claims nothing and hands nothing on until the next UTC midnight ([budgets.md](budgets.md))'),
  BT019: code(OutputSchemaError, 400, 'an artifact whose task expects a `json_schema` of it is not JSON, or does not match it (the detail lists each problem as JSON: `[{path, message}]`)'),
} satisfies Record<string, BatonCode>;
export type BatonCodeName = keyof typeof batonCodes;

/** The refusal for one of Baton's codes, raised in TypeScript as the database would raise it: its class is the code's. */
export function refusalOf(code: BatonCodeName, context: Omit<ErrorContext, 'code'>): BatonError {
  return new batonCodes[code].error({ code, ...context });
}

/**
 * The HTTP status a refusal is answered with where a surface speaks HTTP: a Baton code's own (the
 * table); a code of Postgres's or PostgREST's by the class it is read as.
 */
export function httpStatusOf(err: BatonError): number {
  // The database answered with what this version does not read: the surface's upstream is at fault.
  if (err instanceof UnreadableAnswerError) return 502;
  const own = batonCode(err.code);
  if (own) return own.http;
  if (err instanceof NotFoundError) return 404;
  if (err instanceof ValidationError) return 400;
  if (err instanceof ForbiddenError || err instanceof UnauthorizedError) return 403;
  return 409;
}

/** What Baton's code `code` means, or undefined for another code (Postgres's, PostgREST's, the client's own). */
export function batonCode(code: string): BatonCode | undefined {
  return Object.hasOwn(batonCodes, code) ? batonCodes[code as BatonCodeName] : undefined;
}

/** Codes from Postgres and PostgREST that reach Baton's callers. */
const foreignErrorCodes: Record<string, ErrorClass> = {
  PGRST000: ConnectionError, // PostgREST cannot connect to its database
  PGRST001: ConnectionError, // PostgREST lost its database connection (internal error)
  PGRST002: ConnectionError, // PostgREST is (re)loading its schema cache after a reconnect
  PGRST003: ConnectionError, // PostgREST's pool had no free connection in time
  '57P01': ConnectionError, // admin_shutdown: Postgres stopping or restarting under the request
  '57P02': ConnectionError, // crash_shutdown: another backend crashed and Postgres resets
  '57P03': ConnectionError, // cannot_connect_now: Postgres starting up or in recovery
  '08000': ConnectionError, // connection_exception
  '08003': ConnectionError, // connection_does_not_exist
  '08006': ConnectionError, // connection_failure
  '40P01': TransientError, // deadlock_detected: the transaction was rolled back
  '40001': TransientError, // serialization_failure: the transaction was rolled back
  '55P03': TransientError, // lock_not_available: a lock not had within lock_timeout
  '57014': TransientError, // query_canceled: a statement stopped by statement_timeout (8 s for agents on hosted)
  '42501': ForbiddenError, // insufficient_privilege, including a refused RLS write
  '22P02': ValidationError, // invalid_text_representation: bad uuid, unknown enum value
  '22023': ValidationError, // invalid_parameter_value
  '22007': ValidationError, // invalid_datetime_format
  '22008': ValidationError, // datetime_field_overflow
  '22001': ValidationError, // string_data_right_truncation
  '23502': ValidationError, // not_null_violation
  '23514': ValidationError, // check_violation
  '23503': NotFoundError, // foreign_key_violation: names an agent or task that does not exist
  '23505': ConflictError, // unique_violation
  PGRST116: NotFoundError, // .single() found no row
  PGRST202: ValidationError, // no function matches the arguments given
  PGRST204: ValidationError, // unknown column
  PGRST300: UnauthorizedError, // server lacks a JWT secret
  PGRST301: UnauthorizedError, // JWT invalid
  PGRST302: UnauthorizedError, // no credentials and no anonymous role
  PGRST303: UnauthorizedError, // JWT claims invalid, e.g. expired
};

/** What to do when the database's schema and this client are of different versions. */
const versionSkewHint = 'The database\'s schema and this client are of different versions: apply this version\'s migrations '
  + '(npx supabase db push; the local stack applies them when it starts), or use the client that matches the database.';

/**
 * Hints that come before PostgREST's own: for a function or column the schema cache lacks, PostgREST
 * suggests the nearest name, while Baton's client only calls what its migrations make.
 */
const foreignHintsFirst: Record<string, string> = {
  PGRST202: versionSkewHint,
  PGRST204: versionSkewHint,
};

const foreignHints: Record<string, string> = {
  '42501': 'Agents change tasks only through Baton\'s functions (claim, complete, …), never by writing rows.',
  '23503': 'Check the names of the agents and tasks you referred to.',
  PGRST301: 'Check BATON_AGENT_TOKEN: it must be a token minted for this project.',
  PGRST303: 'The token has expired; ask an operator for a new one: baton agent token <id>.',
  '40P01': 'Nothing was changed: make the same call again.',
  '40001': 'Nothing was changed: make the same call again.',
  '55P03': 'Nothing was changed: make the same call again.',
  '57014': 'The statement ran past the role\'s statement_timeout and nothing was changed: make the same call again.',
};

/** What a gateway answers while what stands behind it is away (bad gateway, unavailable, timed out). */
const unavailableStatuses = new Set([502, 503, 504]);
const unavailableHint = 'The API or its database is restarting or down: try again shortly. A daemon retries on its own; for the local stack: baton stack status.';

/**
 * True for an error that says the API or its database is not there now (ConnectionError): the call
 * decided nothing and may be made again. Any other error is an answer.
 */
export function isUnavailable(err: unknown): err is ConnectionError {
  return err instanceof ConnectionError;
}

/**
 * True for an error after which the same call may simply be made again: the API or database away
 * (isUnavailable), or a call the database undid for now (TransientError). The one rule for what a
 * daemon retries and what the CLI calls temporary.
 */
export function isRetryable(err: unknown): err is ConnectionError | TransientError {
  return err instanceof ConnectionError || err instanceof TransientError;
}

/**
 * True for a call that got no answer within its deadline (src/client/http.ts's LateAnswerError, in a
 * failed fetch's cause or, through supabase-js, its details): the API may be only slow.
 */
export function isLate(err: unknown): boolean {
  for (let e = err; e instanceof Error; e = e.cause) {
    if (e.name === 'LateAnswerError' || (e instanceof ConnectionError && /Caused by: LateAnswerError:/.test(e.details ?? ''))) return true;
  }
  return false;
}

/**
 * True for an error that is a fault in Baton's own code (a TypeError, a ReferenceError, a RangeError):
 * not an answer from the database, nor the machine saying no (a file that is not there). A surface
 * that turns errors into answers for its caller logs these as errors, with their stack, and says so.
 */
export function isFault(err: unknown): err is Error {
  return err instanceof TypeError || err instanceof ReferenceError || err instanceof RangeError;
}

/**
 * The error for an answer that `issues` (zod's) say this client cannot read, naming the request
 * (e.g. rpc/handoff_task) and up to three of the fields at fault.
 */
export function unreadableAnswer(request: string, issues: ReadonlyArray<{ path: PropertyKey[]; message: string }>): UnreadableAnswerError {
  const fields = issues.slice(0, 3).map((issue) => `${issue.path.map(String).join('.') || 'the answer'}: ${issue.message}`);
  const more = issues.length > 3 ? `, and ${issues.length - 3} more` : '';
  return new UnreadableAnswerError({
    code: 'ANSWER',
    message: `the answer to ${request} is not what this client reads (${fields.join('; ')}${more})`,
    hint: versionSkewHint,
  });
}

/**
 * Why a request never got an answer, in its cause's words: supabase-js puts them in a failed fetch's
 * details ("Caused by: Error: self-signed certificate (DEPTH_ZERO_SELF_SIGNED_CERT)"), where its
 * message only says "fetch failed".
 */
function causeOf(details: string | null | undefined): string | undefined {
  return /\n\nCaused by: (?:\w*Error: )?([^\n]+)/.exec(details ?? '')?.[1];
}

/**
 * Maps a PostgREST error (as supabase-js returns it) to a typed Baton error. An error without a code
 * never came from the database: the API could not be reached, or its gateway refused the API key.
 */
export function toBatonError(
  error: { code?: string; message: string; details?: string | null; hint?: string | null },
  { status, url }: { status?: number; url?: string } = {},
): BatonError {
  if (!error.code) {
    const where = url ?? 'the Baton API';
    const said = error.message || (status ? `HTTP ${status}` : 'no answer');
    if (status === 401 || status === 403) {
      return new UnauthorizedError({
        code: 'API_KEY',
        message: `${where} refused the API key: ${said}`,
        details: error.details ?? null,
        hint: 'Check SUPABASE_PUBLISHABLE_KEY or SUPABASE_ANON_KEY (agents), SUPABASE_SECRET_KEY or SUPABASE_SERVICE_ROLE_KEY (operator commands), and that the token was signed with a key the project has; baton stack env prints the local stack\'s keys.',
      });
    }
    if (status && unavailableStatuses.has(status)) {
      return new ConnectionError({
        code: 'UNAVAILABLE',
        message: `${where} is unavailable (HTTP ${status}${error.message ? `: ${error.message}` : ''})`,
        details: error.details ?? null,
        hint: unavailableHint,
      });
    }
    // postgrest-js reports a failed fetch with an empty code and status 0.
    return new ConnectionError({
      code: 'CONNECTION',
      message: status
        ? `${where} answered HTTP ${status}${error.message ? ` (${error.message})` : ''}, not as a Baton API`
        : `could not reach ${where}: ${causeOf(error.details) ?? said.replace(/^TypeError: /, '')}`,
      details: error.details ?? null,
      hint: status
        ? 'Set SUPABASE_URL to the project URL itself (e.g. https://<ref>.supabase.co or http://127.0.0.1:54321), without /rest/v1.'
        : 'Check SUPABASE_URL (or --url), and that the project is up; for the local stack: baton stack status.',
    });
  }
  const code = error.code;
  const ErrorType: ErrorClass = batonCode(code)?.error ?? foreignErrorCodes[code]
    // A code of PostgREST's own that is not listed, answered with 502-504, still means "not there now".
    ?? (status && unavailableStatuses.has(status) ? ConnectionError : BatonError);
  return new ErrorType({
    code,
    message: error.message,
    details: error.details ?? null,
    hint: foreignHintsFirst[code] || error.hint || foreignHints[code] || (ErrorType === ConnectionError ? unavailableHint : null),
  });
}
