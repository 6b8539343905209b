/**
 * Compile-time proof that the zod schemas (the runtime check) agree with the types generated from the
 * database: the same columns, and the same type for each (a JSON column only the same nullability,
 * since zod says more about its shape than the database does). test/types.test.ts compiles this file;
 * a disagreement fails it with the offending column names in the error.
 */
import type { z } from 'zod';
import type { Database, Json } from '../src/database.types.js';
import type * as S from '../src/schemas.js';

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false;
type IsJson<T> = Equal<NonNullable<T>, Json> extends true ? true : Equal<NonNullable<T>, NonNullable<Json>>;
type Same<Zt, Rt> = IsJson<Rt> extends true
  ? Equal<null extends Zt ? true : false, null extends Rt ? true : false>
  : Equal<Zt, Rt>;
/** The columns where a zod schema and a generated row disagree (never when they agree). */
type Disagreeing<Z, R> = {
  [K in keyof Z | keyof R]: K extends keyof Z ? K extends keyof R ? Same<Z[K], R[K]> extends true ? never : K : K : K
}[keyof Z | keyof R];
/** Views' generated columns are all nullable: for them, the names must agree. */
type DifferentNames<Z, R> = Exclude<keyof Z, keyof R> | Exclude<keyof R, keyof Z>;
type Agree<Mismatch extends never> = Mismatch;

type Public = Database['public'];
type Row<T extends keyof Public['Tables']> = Public['Tables'][T]['Row'];
type ViewRow<T extends keyof Public['Views']> = Public['Views'][T]['Row'];
type Returned<F extends keyof Public['Functions']> = Public['Functions'][F]['Returns'] extends Array<infer R> ? R : never;

export type Checks = [
  Agree<Disagreeing<z.infer<typeof S.Agent>, Row<'agents'>>>,
  Agree<Disagreeing<z.infer<typeof S.Task>, Row<'task_handoffs'>>>,
  Agree<Disagreeing<z.infer<typeof S.TaskEvent>, Row<'task_events'>>>,
  Agree<Disagreeing<z.infer<typeof S.Message>, Row<'agent_messages'>>>,
  // Artifacts are listed without their inline content, which is fetched on its own.
  Agree<Disagreeing<z.infer<typeof S.Artifact>, Omit<Row<'task_artifacts'>, 'content'>>>,
  Agree<DifferentNames<z.infer<typeof S.AgentPresence>, ViewRow<'agent_presence'>>>,
  Agree<DifferentNames<z.infer<typeof S.LineageRow>, ViewRow<'task_lineage'>>>,
  Agree<DifferentNames<z.infer<typeof S.BatchOutcome>, Returned<'report_outcomes'>>>,
  Agree<DifferentNames<z.infer<typeof S.BatchHandoff>, Returned<'handoff_tasks'>>>,
  Agree<DifferentNames<z.infer<typeof S.ClaimCheck>, Returned<'check_claims'>>>,
  Agree<Disagreeing<{ status: z.infer<typeof S.TaskStatus> }, { status: Public['Enums']['task_status'] }>>,
  Agree<Disagreeing<{ priority: z.infer<typeof S.TaskPriority> }, { priority: Public['Enums']['task_priority'] }>>,
  Agree<Disagreeing<{ kind: z.infer<typeof S.MessageKind> }, { kind: Public['Enums']['message_kind'] }>>,
];
