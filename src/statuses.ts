/**
 * The task statuses and priorities as plain values, for code that must not load zod to name them (the
 * CLI's command tree); schemas.ts builds its enums from these.
 */

/** Mirrors the SQL enum public.task_status. */
export const taskStatuses = ['pending', 'claimed', 'in_progress', 'input_required', 'completed', 'failed', 'rejected', 'cancelled'] as const;
export type TaskStatus = (typeof taskStatuses)[number];
export const finalStatuses: readonly TaskStatus[] = Object.freeze(['completed', 'failed', 'rejected', 'cancelled']);
export const openStatuses: readonly TaskStatus[] = Object.freeze(['pending', 'claimed', 'in_progress', 'input_required']);

/** Mirrors the SQL enum public.task_priority, lowest first. */
export const taskPriorities = ['low', 'medium', 'high', 'urgent'] as const;
export type TaskPriority = (typeof taskPriorities)[number];
