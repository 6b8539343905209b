/**
 * How this process's clients send their requests. A daemon or a server (many requests, for hours) goes
 * through undici's keep-alive pool, whose request API costs far less CPU per request than fetch; a
 * one-shot CLI command (one or two requests, then exit) uses Node's own fetch, so that it need not load
 * a second copy of undici first. The CLI says which before it makes a client.
 */
export const transport = { oneShot: false };
