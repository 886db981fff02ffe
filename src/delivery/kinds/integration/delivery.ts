import type { AttemptResult, ClaimedDelivery } from "../../../db/job-table/index.js";
import { installCatalogFetch, type VendorContext } from "../../../catalog/catalog-fetch.js";
import type { IntegrationDestinationSettings } from "../../../catalog/integration-settings.js";
import { segmentEventOf } from "../../../catalog/segment-event.js";
import type { DeliveryContext, DestinationOf, KindDelivery } from "../kind.js";
import { createTargetCache, type Target } from "../target-cache.js";
import { createIntegrationBatcher } from "./batcher.js";
import { attemptsOfRun } from "./outcomes.js";
import { createIntegrationRunner, type IntegrationRunner } from "./runner.js";

export type IntegrationDestination = DestinationOf<"integration", IntegrationDestinationSettings>;

/** Batches of a subscription in flight or filling at once: what the loop hands over (inFlightLimit). */
const batchesInFlight = 4;
/** The most calls per batch that count towards inFlightLimit. */
const maxBatchHeld = 1_000;

/**
 * The delivery half of the integration kind: each call runs the actions of
 * the destination's subscriptions that match it (the catalog's runtime
 * maps, validates and builds the requests; they go through the
 * destination's own HTTP client, catalog-fetch.ts). Every request is an
 * attempt entry named by its subscription; the call is delivered once
 * every matched subscription has succeeded, in this attempt or an earlier
 * one. docs/integrations.md, "How a delivery runs".
 */
export function createIntegrationDelivery(context: DeliveryContext): KindDelivery<IntegrationDestination> {
  installCatalogFetch();
  const { clock, config } = context;
  // A runner holds nothing open: replaced or dropped, it is let go (its batches still go by time).
  const runners = createTargetCache<IntegrationDestinationSettings, IntegrationRunner & Target>({
    clock,
    create: (_destinationId, settings, revision) => ({ ...createIntegrationRunner(revision, settings), close: async () => {} }),
  });
  const contextOf = (destinationId: string, runner: IntegrationRunner): VendorContext => ({
    send: (use) => context.http(destinationId, use),
    secrets: runner.secrets,
    requests: [],
    now: () => clock.now(),
  });
  const batcher = createIntegrationBatcher({ clock, flushMs: config.integrationFlushMs ?? 1_000, contextOf });

  const runnerOf = (destination: IntegrationDestination): IntegrationRunner =>
    runners.get(destination.id, destination.revision, () => destination.integration);

  /** The one entry of a call no subscription ran for (an empty subscription name: it is the call's, not a subscription's). */
  function callEntry(runner: IntegrationRunner, outcome: "success" | "permanent", reason: string): AttemptResult[] {
    return [{ ...attemptsOfRun("", 0, [], { outcome, message: null }, clock.now(), runner.label)[0]!, error: reason }];
  }

  return {
    async deliver(job: ClaimedDelivery, destination, body, earlier) {
      const runner = runnerOf(destination);
      let event: ReturnType<typeof segmentEventOf>;
      try {
        event = segmentEventOf(JSON.parse(body) as Record<string, unknown>, { receivedAt: job.receivedAt, sentAt: job.sentAt });
      } catch (error) {
        return callEntry(runner, "permanent", `the call is not JSON: ${(error as Error).message}`);
      }
      let chosen = runner.compiled.matching(event).map((i) => runner.subscriptions[i]!);
      // Settings moved since the call was routed: nothing of them wants it now.
      if (chosen.length === 0) return callEntry(runner, "success", "no subscription matches this call any more: nothing sent");
      if (earlier) {
        chosen = chosen.filter((s) => !earlier.succeededParts.has(s.name));
        if (chosen.length === 0) return callEntry(runner, "success", "every matched subscription succeeded in an earlier attempt");
      }
      const runs = chosen.map(async (subscription) => {
        if (subscription.batch) return batcher.add(job.destinationId, runner, subscription, event);
        const vendor = contextOf(job.destinationId, runner);
        const startedAt = clock.now();
        const verdict = await runner.run(subscription, event, vendor);
        return attemptsOfRun(subscription.name, subscription.index, vendor.requests, verdict, startedAt, runner.label);
      });
      return (await Promise.all(runs)).flat();
    },
    label: (destination) => `integration:${destination.integration.slug}`,
    span: (destination) => ({ name: "integration", attributes: { "waypost.integration.slug": destination.integration.slug } }),
    inFlightLimit(destination) {
      // A batch size of thousands (some entries default to 10,000) would hand one destination most of the loop.
      const most = Math.min(maxBatchHeld, Math.max(0, ...runnerOf(destination).subscriptions.map((s) => s.batch?.size ?? 0)));
      return most === 0 ? undefined : Math.max(config.perDestinationConcurrency, most * batchesInFlight);
    },
    tick: () => batcher.tick(),
    flush: () => batcher.flush(),
    openDestinations: () => runners.destinations(),
    reconcile: (current) => runners.reconcile(current),
    close: async () => {
      await batcher.close();
      await runners.close();
    },
  };
}

/** The name the kind module (index.ts) takes its delivery half by. */
export const createDelivery = createIntegrationDelivery;
