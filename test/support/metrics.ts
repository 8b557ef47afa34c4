import { processMetrics, type TaskgateMetrics } from '@taskgate/metrics';
import parsePrometheusTextFormat, { type ParsedFamily, type ParsedSample } from 'parse-prometheus-text-format';

/**
 * A scrape, parsed by a Prometheus text-format parser (not by the code that wrote it): `families`
 * as typed by the exposition, and `flat` with every histogram's _bucket, _count and _sum series as
 * a family of its own (the parser folds a histogram's series into one sample, which loses the
 * labels of a histogram that has any).
 */
export interface Scrape {
  readonly families: ParsedFamily[];
  readonly flat: ParsedFamily[];
}

export async function scrape(metrics: TaskgateMetrics = processMetrics()): Promise<Scrape> {
  return parseScrape(await metrics.scrape());
}

/** Scrapes until `predicate` holds (a failure names `what`, not the whole scrape). */
export async function scrapeUntil(
  what: string,
  predicate: (parsed: Scrape) => boolean,
  timeoutMs = 20_000,
  metrics: TaskgateMetrics = processMetrics(),
): Promise<Scrape> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const parsed = await scrape(metrics);
    if (predicate(parsed)) return parsed;
    if (Date.now() > deadline) throw new Error(`metrics never showed ${what} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export function parseScrape(text: string): Scrape {
  return {
    families: parsePrometheusTextFormat(text),
    flat: parsePrometheusTextFormat(text.replace(/^# TYPE (\S+) (histogram|summary)$/gm, '# TYPE $1 untyped')),
  };
}

function samplesOf(families: readonly ParsedFamily[], name: string, labels: Record<string, string>): ParsedSample[] {
  // A family's series may come in several runs (the flat view starts one at each label set).
  return families
    .flatMap((entry) => (entry.name === name ? entry.metrics : []))
    .filter((sample) => Object.entries(labels).every(([key, value]) => sample.labels?.[key] === value));
}

/** The sum over the samples of a counter or gauge whose labels include `labels` (0 if none). */
export function sampleValue(parsed: Scrape, name: string, labels: Record<string, string> = {}): number {
  return samplesOf(parsed.flat, name, labels).reduce((sum, sample) => sum + Number(sample.value ?? 0), 0);
}

/** How many observations a histogram holds under `labels` (0 if none). */
export function countOf(parsed: Scrape, name: string, labels: Record<string, string> = {}): number {
  return sampleValue(parsed, `${name}_count`, labels);
}

/** The smallest bucket bound that holds every observation of a histogram under `labels`. */
export function upperBoundOf(parsed: Scrape, name: string, labels: Record<string, string>): number {
  const total = countOf(parsed, name, labels);
  const buckets = samplesOf(parsed.flat, `${name}_bucket`, labels).filter((sample) => Number(sample.value) === total);
  return Math.min(
    ...buckets.map((sample) => Number(sample.labels?.le === '+Inf' ? Number.POSITIVE_INFINITY : sample.labels?.le)),
  );
}
