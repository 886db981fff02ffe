import type { Clock } from "../clock.js";
import type { ClaimedDelivery, DeliveryCompletion } from "../db/job-table/index.js";
import type { Queryable } from "../db/pool.js";
import { recordTransformDrop } from "../db/queries/transform-drops.js";
import { withProfileIds } from "../identity/profile-context.js";
import type { Metrics } from "../metrics.js";
import { shapeBody } from "../routing/shape-body.js";
import { maxQueueWaitMs, sandboxKey, type TransformSandboxes } from "../sandbox/transform-sandbox.js";
import { deferredCompletion, releaseCompletion, transformFailedCompletion } from "./completion.js";
import type { AnyDestination } from "./kinds/registry.js";

export interface ShapeStageOptions {
  pool: Queryable;
  clock: Clock;
  metrics?: Metrics | undefined;
  sandboxes: TransformSandboxes;
  /** Where a delivery finished here (dropped, failed, deferred) goes. */
  finish(completion: DeliveryCompletion): void;
  /** Where attempts of the destination go, as its kind names it (on a failed transform's attempt). */
  labelOf(destination: AnyDestination): string;
}

export interface ShapeStage {
  /** Whether the destination has rules that change bodies (dropped fields, a transform). */
  applies(destination: AnyDestination): boolean;
  /**
   * The body this delivery sends under its destination's current rules
   * (dropped fields, transform), whatever its kind; undefined when the
   * delivery was finished here instead (the transform failed, dropped the
   * call, or its sandbox is too busy to run it soon).
   */
  shape(job: ClaimedDelivery, destination: AnyDestination): Promise<string | undefined>;
  /** Destinations whose sandbox turned deliveries away until after `now` (clock ms): claims take none of theirs meanwhile. */
  backingOff(now: number): string[];
}

/** The stage between claim and kind: a destination's rules make the body its kind delivers. */
export function createShapeStage(options: ShapeStageOptions): ShapeStage {
  const { clock, metrics, sandboxes, finish } = options;
  // Destinations whose transform sandbox had more waiting than it could run
  // soon, until when: their deliveries were handed back, and would only be
  // handed back again.
  const backoff = new Map<string, number>();
  return {
    applies: (destination) => destination.drop_fields.length > 0 || destination.transform !== "" || destination.add_profile_id,
    backingOff(now) {
      for (const [destinationId, until] of backoff) if (until <= now) backoff.delete(destinationId);
      return [...backoff.keys()];
    },
    async shape(job, destination) {
      const rules = {
        dropFields: destination.drop_fields,
        transform: destination.transform,
        sandboxKey: sandboxKey(destination.id, destination.revision),
      };
      // context.profileId first: a transform sees it too.
      const payload = destination.add_profile_id ? (await withProfileIds(options.pool, [job.payload]))[0]! : job.payload;
      const outcome = await shapeBody(payload, rules, sandboxes, { mayDefer: true });
      if (outcome.kind === "busy") {
        // Waiting for the sandbox would hold this slot from other destinations: hand it back for later.
        const until = clock.now().getTime() + maxQueueWaitMs;
        backoff.set(job.destinationId, until);
        metrics?.transformDeferred.inc({ destination_id: job.destinationId });
        finish(deferredCompletion(job, new Date(until)));
        return undefined;
      }
      if (outcome.transformMs !== undefined) metrics?.transformDuration.observe(outcome.transformMs / 1000);
      if (outcome.kind === "send") return outcome.body;
      if (outcome.kind === "error") {
        finish(transformFailedCompletion(job, destination, options.labelOf(destination), outcome.error, clock.now()));
        return undefined;
      }
      await recordTransformDrop(options.pool, job.destinationId, job.id, clock.now());
      metrics?.callsFiltered.inc({ destination_id: job.destinationId, reason: "transform" });
      finish(releaseCompletion(job, clock.now(), "cancelled"));
      return undefined;
    },
  };
}
