/**
 * How this process's clients send their requests. A daemon or a server (many requests, for hours) goes
 * through undici's keep-alive pool, whose request API costs far less CPU per request than fetch; a
 * one-shot CLI command (one or two requests, then exit) uses Node's own HTTP client (node:http), which
 * needs neither a second copy of undici nor fetch's WebAssembly parser, whose compiling a process that
 * used fetch waits for at exit. The CLI says which before it makes a client.
 */
export const transport = { oneShot: false };
