/**
 * The block follower of `bench/follower.ts`, in a child process of its own so that its CPU is
 * measured alone (process.cpuUsage: every thread of the process, its Postgres client, its embedded
 * ClickHouse and V8's helpers included). It runs as the indexer role runs it (workers/indexer.role.ts:
 * `createBlockFollower` in a loop that idles IDLE_MS after a round that found nothing more), against
 * the service's Postgres and localnet, with an embedded ClickHouse (chdb) of its own folder: the
 * service runs no role that would hold one, and the follower's ClickHouse writes are part of its cost.
 *
 * The RPC client it gets counts the HTTP requests it sends (a JSON-RPC batch is one, as
 * ledgerfeed_block_follower_rpc_requests_total counts them) and the calls they hold.
 *
 * Driven over IPC by `startFollowerChild`: open, follow, snapshot on demand (counters the parent
 * subtracts over a window), and old-rounds (stops the block loop, then times rounds of the old
 * per-address follower, `followWallets`, on the same stores).
 */
import { mkdir } from 'node:fs/promises';
import { constants, performance, PerformanceObserver } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { Counter, Gauge } from 'prom-client';
import { createClickHouse, migrateClickHouse } from '../src/adapters/clickhouse/index.js';
import type { RpcClient } from '../src/adapters/solana/index.js';
import { startLoop, type BackgroundLoop } from '../src/app/background-loop.js';
import { createBlockFollower } from '../src/app/indexer/block-follower.js';
import { followWallets } from '../src/app/indexer/wallet-follower.js';
import { createMetrics } from '../src/observability/metrics.js';
import { forkBenchChild } from './bench-child.js';
import { openChildCore, serveParent, type ChildStack } from './child-core.js';
import { threadCpuSeconds } from './thread-cpu.js';

/** The loop's pause after a round that found nothing more: the indexer role's (workers/indexer.role.ts). */
const IDLE_MS = 1_000;

export interface FollowerInit extends ChildStack {
  /** The embedded ClickHouse folder of the follower process (created and migrated if new). */
  chdbPath: string;
}

/** The follower process's counters at one moment; two of them give a window's figures. */
export interface FollowerSnapshot {
  /** Date.now() when taken. */
  atMs: number;
  /** CPU of the whole process (user + system), microseconds. */
  cpuMicros: number;
  /** CPU seconds by thread name (`main`: the follower's JavaScript; chdb's pools, V8's helpers). */
  threads: Array<[string, number]>;
  /** Garbage collections so far: full (mark-compact) ones and their pause, young-generation pauses. */
  gc: { major: number; majorMs: number; minorMs: number };
  /** V8 heap in use, bytes. */
  heapUsed: number;
  /** HTTP requests to the RPC node (ledgerfeed_block_follower_rpc_requests_total). */
  requests: number;
  /** JSON-RPC calls those requests held. */
  calls: number;
  /** Blocks passed (ledgerfeed_block_follower_blocks_total). */
  blocks: number;
  /** Deposits credited (ledgerfeed_block_follower_deposits_total{stage="credited"}). */
  credited: number;
  /** Token accounts matched against (ledgerfeed_block_follower_followed_accounts). */
  followedTokenAccounts: number;
  /** Slots between the cursor and the newest confirmed block after the last round. */
  confirmedLag: number;
  /** Rounds since following began that found nothing more to read (the loop then idles). */
  idleRounds: number;
  failedRounds: number;
  lastError?: string;
}

/** One round of the old per-address follower. */
export interface OldRound {
  seconds: number;
  cpuMicros: number;
  /** Token accounts it listed (getSignaturesForAddress each). */
  addresses: number;
  requests: number;
  calls: number;
  /** New signatures the ledger did not cause, and deposits it had already recorded (indexed again). */
  signatures: number;
  recorded: number;
  deposits: number;
}

export interface FollowerChild {
  pid: number;
  follow(): Promise<void>;
  snapshot(): Promise<FollowerSnapshot>;
  oldRounds(rounds: number): Promise<OldRound[]>;
  close(): Promise<void>;
}

type ToChild =
  | { type: 'open'; init: FollowerInit }
  | { type: 'follow' }
  | { type: 'snapshot' }
  | { type: 'old-rounds'; rounds: number };
type FromChild =
  | { type: 'opened' }
  | { type: 'following' }
  | { type: 'snapshot'; snapshot: FollowerSnapshot }
  | { type: 'old-rounds'; rounds: OldRound[] };

export async function startFollowerChild(init: FollowerInit): Promise<FollowerChild> {
  const child = forkBenchChild<FromChild>(import.meta.url);
  try {
    await child.ask({ type: 'open', init } satisfies ToChild, 'opened');
  } catch (error) {
    await child.close();
    throw error;
  }
  return {
    pid: child.pid,
    follow: async () => void (await child.ask({ type: 'follow' } satisfies ToChild, 'following')),
    snapshot: async () => (await child.ask({ type: 'snapshot' } satisfies ToChild, 'snapshot')).snapshot,
    oldRounds: async (rounds) =>
      (await child.ask({ type: 'old-rounds', rounds } satisfies ToChild, 'old-rounds')).rounds,
    close: child.close,
  };
}

/** The RPC client, counting the HTTP requests sent and the calls they held. */
function countingRpc(rpc: RpcClient, counts: { requests: number; calls: number }): RpcClient {
  return {
    ...rpc,
    call: <T>(method: string, params: readonly unknown[]) => {
      counts.requests++;
      counts.calls++;
      return rpc.call<T>(method, params);
    },
    batch: <T>(calls: Parameters<RpcClient['batch']>[0]) => {
      counts.requests++;
      counts.calls += calls.length;
      return rpc.batch<T>(calls);
    },
  };
}

async function metricValue(metric: Counter | Gauge, labels: Record<string, string> = {}): Promise<number> {
  const { values } = await metric.get();
  const entry = values.find((value) =>
    Object.entries(labels).every(([name, label]) => value.labels[name] === label),
  );
  return entry?.value ?? 0;
}

/** The garbage collections of this process, from the first call on (V8's pauses on the main thread). */
const gcTally = { major: 0, majorMs: 0, minorMs: 0 };
function countCollections(): void {
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = (entry as { detail?: { kind?: number } }).detail?.kind;
      if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) {
        gcTally.major++;
        gcTally.majorMs += entry.duration;
      } else if (kind === constants.NODE_PERFORMANCE_GC_MINOR) gcTally.minorMs += entry.duration;
    }
  }).observe({ entryTypes: ['gc'] });
}

function cpuMicros(): number {
  const usage = process.cpuUsage();
  return usage.user + usage.system;
}

async function open(init: FollowerInit) {
  const opened = openChildCore(init, 4);
  const { config, logger, db, core } = opened;
  await mkdir(init.chdbPath, { recursive: true });
  const clickhouse = createClickHouse({ kind: 'chdb', path: init.chdbPath }, config.CLICKHOUSE_DATABASE);
  await migrateClickHouse(clickhouse);
  const metrics = createMetrics();
  const counts = { requests: 0, calls: 0 };
  const deps = {
    db,
    clickhouse,
    rpc: countingRpc(core.rpc, counts),
    metrics,
    ledger: core.ledger,
    logger,
    bootstrapChain: () => core.bootstrapChain(),
  };
  await core.bootstrapChain();
  return {
    deps,
    counts,
    close: async () => {
      await clickhouse.close();
      await opened.close();
    },
  };
}

function runChild(): void {
  countCollections();
  let opened: Awaited<ReturnType<typeof open>> | undefined;
  let loop: BackgroundLoop | undefined;
  let idleRounds = 0;
  let failedRounds = 0;
  let lastError: string | undefined;
  const send = (message: FromChild) => process.send!(message);
  const stopLoop = async () => {
    const running = loop;
    loop = undefined;
    await running?.stop();
  };

  const handle = async (message: ToChild): Promise<void> => {
    switch (message.type) {
      case 'open':
        opened = await open(message.init);
        send({ type: 'opened' });
        return;
      case 'follow': {
        const { deps } = opened!;
        const follower = createBlockFollower(deps);
        loop = startLoop({
          name: 'block follower',
          log: deps.logger,
          idleMs: IDLE_MS,
          step: async () => {
            try {
              const round = await follower.step();
              if (!round.more) idleRounds++;
              return round.more;
            } catch (error) {
              failedRounds++;
              lastError = error instanceof Error ? error.message : String(error);
              throw error;
            }
          },
        });
        send({ type: 'following' });
        return;
      }
      case 'snapshot': {
        const { deps, counts } = opened!;
        const { metrics } = deps;
        send({
          type: 'snapshot',
          snapshot: {
            atMs: Date.now(),
            cpuMicros: cpuMicros(),
            threads: [...(threadCpuSeconds() ?? [])],
            gc: { ...gcTally },
            heapUsed: process.memoryUsage().heapUsed,
            requests: await metricValue(metrics.followerRpcRequests),
            calls: counts.calls,
            blocks: await metricValue(metrics.followerBlocks),
            credited: await metricValue(metrics.followerDeposits, { stage: 'credited' }),
            followedTokenAccounts: await metricValue(metrics.followedAccounts),
            confirmedLag: await metricValue(metrics.followerSlotLag, { commitment: 'confirmed' }),
            idleRounds,
            failedRounds,
            ...(lastError ? { lastError } : {}),
          },
        });
        return;
      }
      case 'old-rounds': {
        await stopLoop();
        const { deps, counts } = opened!;
        const rounds: OldRound[] = [];
        for (let i = 0; i < message.rounds; i++) {
          const before = { ...counts, cpu: cpuMicros(), at: performance.now() };
          const round = await followWallets(deps);
          rounds.push({
            seconds: (performance.now() - before.at) / 1000,
            cpuMicros: cpuMicros() - before.cpu,
            addresses: round.addresses,
            requests: counts.requests - before.requests,
            calls: counts.calls - before.calls,
            signatures: round.signatures,
            recorded: round.recorded,
            deposits: round.deposits,
          });
        }
        send({ type: 'old-rounds', rounds });
        return;
      }
      default:
        message satisfies never;
    }
  };

  serveParent<ToChild>(handle, async () => {
    await stopLoop();
    await opened?.close();
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) runChild();
