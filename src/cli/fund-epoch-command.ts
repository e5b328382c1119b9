import { setTimeout as sleep } from 'node:timers/promises';
import { shipBatch } from '../app/indexer/event-shipper.js';
import {
  EpochNotReadyError,
  loadPlan,
  planEpoch,
  settleEpoch,
  type CreatorFundDeps,
} from '../app/creator-fund/run-epoch.js';
import { epochContaining, epochStartingAt, formatNative } from '../domain/payouts/creator-fund-rules.js';
import { parseStrict } from './cli-args.js';
import { withIndexerContext } from './indexer-context.js';
import { UsageError } from './usage-error.js';

/** How long `fund-epoch run` waits for an epoch's events to be shippable (open transactions). */
const READY_TIMEOUT_MS = 60_000;

/**
 * `fund-epoch run [--epoch <start>]`: plans one epoch (default: the last one that ended) and
 * drives its batches to confirmation in this process. Run again after a crash, it finds the plan
 * and only finishes the batches still open: each author is paid once.
 */
export async function fundEpochCommand(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'run') throw new UsageError(`fund-epoch takes the subcommand run, got ${sub ?? 'nothing'}`);
  const { values, positionals } = parseStrict(rest, { epoch: { type: 'string' } });
  if (positionals.length > 0)
    throw new UsageError(`fund-epoch run takes no positional arguments: ${positionals.join(' ')}`);
  return withIndexerContext(async (ctx) => {
    const deps: CreatorFundDeps = ctx;
    const epochMs = ctx.config.CREATOR_FUND_EPOCH_MS;
    let epoch;
    if (values.epoch === undefined) {
      const current = epochContaining(new Date(), epochMs);
      epoch = epochContaining(new Date(current.start.getTime() - 1), epochMs);
    } else {
      try {
        epoch = epochStartingAt(new Date(values.epoch), epochMs);
      } catch (error) {
        throw new UsageError(`--epoch: ${(error as Error).message}`);
      }
    }
    if (epoch.end.getTime() > Date.now()) {
      throw new UsageError(
        `epoch ${epoch.start.toISOString()} has not ended yet (it ends ${epoch.end.toISOString()})`,
      );
    }
    try {
      let plan = await loadPlan(ctx, epoch.start);
      if (!plan || plan.outcome === 'unfunded') {
        // This command may be the only shipper running: ship what waits, until the epoch is ready.
        const deadline = Date.now() + READY_TIMEOUT_MS;
        for (;;) {
          while ((await shipBatch(ctx)).events > 0);
          try {
            plan = await planEpoch(deps, epoch);
            break;
          } catch (error) {
            if (!(error instanceof EpochNotReadyError) || Date.now() > deadline) throw error;
            await sleep(500);
          }
        }
      }
      console.log(
        `Epoch ${plan.epochStart.toISOString()} .. ${plan.epochEnd.toISOString()}: ${plan.outcome}` +
          (plan.alreadyPlanned ? ' (planned by an earlier run)' : '') +
          `\n  budget     ${formatNative(plan.budget)} native\n  available  ${formatNative(plan.fundAvailable)} native` +
          `\n  paid       ${formatNative(plan.paidTotal)} native to ${plan.authorCount} author(s) in ${plan.batches.length} batch(es)` +
          (plan.note ? `\n  note       ${plan.note}` : ''),
      );
      const statuses = await settleEpoch(deps, plan, (index, status) => {
        const batch = plan.batches[index];
        console.log(`  batch ${index}: ${status} (${batch?.transfers ?? 0} transfers)`);
      });
      const failed = statuses.filter((s) => s === 'failed').length;
      if (failed > 0) console.log(`  ${failed} batch(es) failed on chain; their ledger legs were reversed`);
      const settled = await loadPlan(ctx, epoch.start);
      for (const batch of settled?.batches ?? [])
        console.log(`  batch ${batch.index} signature ${batch.signature}`);
      return failed > 0 ? 1 : 0;
    } finally {
      ctx.watcher.close();
    }
  });
}
