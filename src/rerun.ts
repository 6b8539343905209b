/**
 * `work` run one at a time: a call while it runs returns the run in flight and has it run once more
 * after, since what the caller wants read may have changed after that run read it.
 */
export function rerunning(work: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  let again = false;
  return () => {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        await work();
      } while (again);
    })().finally(() => { running = undefined; });
    return running;
  };
}
