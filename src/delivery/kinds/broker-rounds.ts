import { randomUUID } from "node:crypto";
import type { BatchAttemptRef } from "../../db/job-table/index.js";
import type { BrokerCall, BrokerPublisher, PublishResult } from "./broker-publisher.js";

/** What one call of a round learns: its own outcome, and the round it went out in. */
export interface RoundOutcome {
  result: PublishResult;
  round: PublishRound;
}

/** One publish round: the calls one publisher sent together, and when. */
export interface PublishRound {
  /** The batch operation its attempts were part of: a random id, one per round, and the calls it carried (one object for the round). */
  batch: BatchAttemptRef;
  /** When the round was published (by the kind's clock): every attempt of the round has it. */
  attemptedAt: Date;
  /** From publishing to the last confirm or acknowledgement. */
  latencyMs: number;
}

interface Gathering {
  calls: BrokerCall[];
  settle: Array<(outcome: RoundOutcome) => void>;
}

/**
 * Gathers the calls handed to one publisher within a turn of the event loop
 * and publishes them as one round: every message of it written in one go
 * (one socket write rather than one per message, which was half of a
 * publish's CPU), then its confirms awaited together. The loop hands a
 * broker destination many calls at once (a claim's worth), and as a round
 * confirms its calls' slots free together, so the next round is as large.
 * Each call still gets its own outcome: a nack, a return or a timeout fails
 * only the calls it names.
 */
export function createRoundGatherer(now: () => Date) {
  const gathering = new Map<BrokerPublisher, Gathering>();

  function send(publisher: BrokerPublisher, round: Gathering) {
    const attemptedAt = now();
    const started = performance.now();
    void publisher.publishRound(round.calls).then((results) => {
      const sent: PublishRound = {
        batch: { id: randomUUID(), calls: round.calls.length },
        attemptedAt,
        latencyMs: Math.round(performance.now() - started),
      };
      round.settle.forEach((settle, i) => {
        settle({ result: results[i] ?? { outcome: "retryable", error: "no outcome" }, round: sent });
      });
    });
  }

  function open(publisher: BrokerPublisher): Gathering {
    const round: Gathering = { calls: [], settle: [] };
    gathering.set(publisher, round);
    // After every delivery this turn started has reached its kind.
    setImmediate(() => {
      gathering.delete(publisher);
      send(publisher, round);
    });
    return round;
  }

  return {
    /** Publishes the call in this turn's round of its publisher; resolves with its outcome once the round's confirms are in. */
    publish(publisher: BrokerPublisher, call: BrokerCall): Promise<RoundOutcome> {
      const round = gathering.get(publisher) ?? open(publisher);
      round.calls.push(call);
      return new Promise<RoundOutcome>((resolve) => round.settle.push(resolve));
    },
  };
}
