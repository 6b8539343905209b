/**
 * A fault in Baton's own code is logged as one, with its stack, where a surface turns errors into
 * answers (MCP's tool results): not at debug beside Baton's refusals, which are answers.
 */
import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { NotFoundError } from '../src/errors.js';
import { logRefusal, refusal } from '../src/mcp/shared.js';

function logged() {
  const lines: Array<{ level: number; msg: string; err?: { stack?: string } }> = [];
  const log = pino({ level: 'debug' }, new Writable({ write(chunk, _e, done) { lines.push(JSON.parse(String(chunk))); done(); } }));
  return { log, lines };
}

describe('a tool call that ends in an error', () => {
  it('says a fault in Baton is Baton\'s and logs it as an error with its stack; a refusal stays an answer at debug', () => {
    const { log, lines } = logged();
    let fault: unknown;
    try {
      (undefined as unknown as { id: string }).id;
    } catch (err) {
      fault = err;
    }
    const said = refusal(fault);
    expect(said.structuredContent).toMatchObject({ error: { code: 'FAULT', message: expect.stringMatching(/^a fault in baton mcp \(TypeError: /), hint: expect.stringContaining('Not your input') } });
    logRefusal(log, fault, { tool: 'show_task' });
    const refused = new NotFoundError({ code: 'BT002', message: 'no such task', hint: null });
    expect(refusal(refused).structuredContent).toMatchObject({ error: { code: 'BT002' } });
    logRefusal(log, refused, { tool: 'show_task' });
    logRefusal(log, Object.assign(new Error('ENOENT: no such file'), { code: 'ENOENT' }), { tool: 'complete' });
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      [50, 'a fault in Baton\'s code ended a tool call'], [20, 'tool refused'], [40, 'tool failed'],
    ]);
    expect(lines[0]!.err?.stack).toContain('TypeError');
  });
});
