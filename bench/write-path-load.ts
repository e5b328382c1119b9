/**
 * The write-path benchmark's HTTP load (`bench/write-path.ts`), run in a child process of its own
 * (bench-child.ts), as real clients would be: its HTTP client then costs the service's event loop
 * nothing. `runLoadPhase` sends the child a LoadPhase; it answers the phase's PhaseResult.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { createJsonPoster } from '../src/adapters/solana/json-poster.js';
import { forkBenchChild } from './bench-child.js';

export type LoadPhase =
  | { kind: 'closed'; base: string; keys: string[]; concurrency: number; seconds: number }
  | { kind: 'open'; base: string; keys: string[]; rate: number; seconds: number };

export interface Tally {
  /** 201s: the cluster executed the payment. */
  executed: number;
  pending: number;
  other: Map<string, number>;
  latenciesMs: number[];
  postIds: string[];
}

export interface PhaseResult {
  tally: Tally;
  seconds: number;
  /** Date.now() when the load began: the parent measures confirmations against it. */
  startedAtMs: number;
  /** Open loop: the worst delay of a post behind its schedule. */
  lagMs: number;
}

export const newTally = (): Tally => ({
  executed: 0,
  pending: 0,
  other: new Map(),
  latenciesMs: [],
  postIds: [],
});

let postCounter = 0;

/**
 * Kept-alive connections, one per client in flight. node:http, not fetch: undici's fetch cost this
 * process ~3 ms of CPU a post, a sixth of the 2-core machine the service is measured on.
 */
const poster = createJsonPoster('http:');

export async function postOnce(base: string, key: string, tally: Tally): Promise<void> {
  const started = performance.now();
  let outcome: string;
  try {
    const response = await poster.post(
      `${base}/api/v1/posts`,
      JSON.stringify({ type: 'post', content: `bench post #${process.pid}-${postCounter++}` }),
      { headers: { authorization: `Bearer ${key}` } },
    );
    const body = JSON.parse(response.text) as { id?: string };
    outcome = String(response.status);
    if ((response.status === 201 || response.status === 202) && typeof body.id === 'string') {
      tally.postIds.push(body.id);
      if (response.status === 201) tally.executed++;
      else tally.pending++;
    } else {
      outcome = `${response.status} ${JSON.stringify(body).slice(0, 120)}`;
      tally.other.set(outcome, (tally.other.get(outcome) ?? 0) + 1);
    }
  } catch (error) {
    outcome = `error ${error instanceof Error ? error.message : String(error)}`;
    tally.other.set(outcome, (tally.other.get(outcome) ?? 0) + 1);
  }
  tally.latenciesMs.push(performance.now() - started);
}

/** Closed loop: `concurrency` clients, each posting again as soon as its previous post answered. */
async function closedLoop(phase: Extract<LoadPhase, { kind: 'closed' }>): Promise<PhaseResult> {
  const tally = newTally();
  const startedAtMs = Date.now();
  const started = performance.now();
  const deadline = started + phase.seconds * 1000;
  let next = 0;
  const client = async (): Promise<void> => {
    while (performance.now() < deadline)
      await postOnce(phase.base, phase.keys[next++ % phase.keys.length]!, tally);
  };
  await Promise.all(Array.from({ length: phase.concurrency }, client));
  return { tally, seconds: (performance.now() - started) / 1000, startedAtMs, lagMs: 0 };
}

/** Open loop: one post every 1/rate s on schedule, whatever the earlier ones are doing. */
async function openLoop(phase: Extract<LoadPhase, { kind: 'open' }>): Promise<PhaseResult> {
  const tally = newTally();
  const total = phase.rate * phase.seconds;
  const inFlight: Promise<void>[] = [];
  const startedAtMs = Date.now();
  const started = performance.now();
  let lagMs = 0;
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / phase.rate;
    const wait = due - performance.now();
    if (wait > 1) await sleep(wait);
    lagMs = Math.max(lagMs, performance.now() - due);
    inFlight.push(postOnce(phase.base, phase.keys[i % phase.keys.length]!, tally));
  }
  await Promise.all(inFlight);
  return { tally, seconds: (performance.now() - started) / 1000, startedAtMs, lagMs };
}

type FromChild = { type: 'result'; result: Omit<PhaseResult, 'tally'> & { tally: WireTally } };
/** A tally as IPC carries it (JSON: no Map). */
type WireTally = Omit<Tally, 'other'> & { other: Array<[string, number]> };

/** Runs one phase in a child process and returns its result (latencies sorted). */
export async function runLoadPhase(phase: LoadPhase): Promise<PhaseResult> {
  const child = forkBenchChild<FromChild>(import.meta.url);
  const { result } = await child.ask({ type: 'run', phase }, 'result');
  await child.close();
  result.tally.latenciesMs.sort((a, b) => a - b);
  return { ...result, tally: { ...result.tally, other: new Map(result.tally.other) } };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.once('message', ({ phase }: { phase: LoadPhase }) => {
    void (phase.kind === 'closed' ? closedLoop(phase) : openLoop(phase)).then((result) => {
      const tally: WireTally = { ...result.tally, other: [...result.tally.other] };
      process.send!({ type: 'result', result: { ...result, tally } } satisfies FromChild);
    });
  });
  process.on('disconnect', () => process.exit(0));
}
