/** Claiming is atomic: of many agents racing, exactly one wins and no task is ever claimed twice. */
import { describe, expect, it } from 'vitest';
import { BatonError } from '../src/errors.js';
import { database, newAgent } from './helpers.js';

const db = database();

describe('the claim race', async () => {
  const sender = await newAgent('race-sender');
  const racers = await Promise.all(Array.from({ length: 12 }, () => newAgent('racer', { capabilities: ['race'], maxConcurrent: 50 })));

  it('gives one broadcast task to exactly one of many concurrent claimers', async () => {
    for (let round = 0; round < 5; round++) {
      const task = await sender.client.broadcast({ title: `prize ${round}`, requiredCapabilities: ['race'] });
      const outcomes = await Promise.allSettled(racers.map((r) => r.client.claim(task.id)));
      const winners = outcomes.filter((o) => o.status === 'fulfilled');
      expect(winners).toHaveLength(1);
      for (const loss of outcomes.filter((o) => o.status === 'rejected')) {
        expect((loss.reason as BatonError).code).toBe('BT004');
      }
      const { rows } = await db.query(`select count(*)::int as claims from task_events where task_id = $1 and to_status = 'claimed'`, [task.id]);
      expect(rows[0].claims).toBe(1);
    }
  });

  it('never hands the same task to two agents claiming batches at once', async () => {
    const capability = `batch-${Date.now()}`;
    const workers = await Promise.all(Array.from({ length: 8 }, () => newAgent('batcher', { capabilities: [capability], maxConcurrent: 50 })));
    const tasks = await Promise.all(Array.from({ length: 60 }, (_, i) =>
      sender.client.broadcast({ title: `job ${i}`, requiredCapabilities: [capability] })));
    const claimed = (await Promise.all(workers.map((w) => w.client.claimNext({ limit: 10, capabilities: [capability] })))).flat();
    const ids = claimed.map((t) => t.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.length).toBe(60);
    expect(new Set(ids)).toEqual(new Set(tasks.map((t) => t.id)));
  });
});
