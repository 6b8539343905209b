/** Order statistics for the benchmarks: the machine is shared and noisy, so they report medians and percentiles. */

/** The value below which a fraction `p` (0–1) of `xs` lies. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) throw new Error('no samples');
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

export const median = (xs: readonly number[]): number => percentile(xs, 0.5);
