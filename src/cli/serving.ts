/**
 * Whether a call of the command serves until stopped (a daemon, a server, a watch) or sends a request
 * or two and exits: the two are set up differently (main.ts, bin.ts).
 */
export function serving(argv: string[]): boolean {
  const [first, second] = argv.slice(2).filter((word) => !word.startsWith('-'));
  return ['mcp', 'a2a', 'board', 'watch'].includes(first ?? '') || (first === 'agent' && second === 'run') || (first === 'stack' && second === 'serve');
}
