/**
 * undici's request API and one keep-alive pool per process, shared by every client in it: what a daemon
 * or a server sends through. Loaded with the first request such a process makes (a one-shot command
 * never loads it: transport.ts).
 */
import { Agent, request } from 'undici';

export { request };
export const dispatcher = new Agent({ keepAliveTimeout: 10_000 });
