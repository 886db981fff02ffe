import { createRouterTransport, type ServiceImpl, type Interceptor } from "@connectrpc/connect";
import { TrackingService } from "../../gen/waypost/v1/tracking_pb.js";
import type { AnalyticsError, CallRecord } from "../../packages/client/src/index.js";

/** What the callbacks reported, plus a way to await a number of outcomes. */
export interface Outcomes {
  successes: CallRecord[];
  failures: Array<{ call: CallRecord; error: AnalyticsError }>;
  onSuccess(call: CallRecord): void;
  onFailure(call: CallRecord, error: AnalyticsError): void;
  /** Resolves once at least `count` calls have been reported, success or failure. */
  settled(count: number): Promise<void>;
}

export function collectOutcomes(): Outcomes {
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  const check = () => {
    const total = o.successes.length + o.failures.length;
    for (const w of [...waiters]) {
      if (total >= w.count) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  };
  const o: Outcomes = {
    successes: [],
    failures: [],
    onSuccess(call) {
      o.successes.push(call);
      check();
    },
    onFailure(call, error) {
      o.failures.push({ call, error });
      check();
    },
    settled(count) {
      return new Promise((resolve) => {
        waiters.push({ count, resolve });
        check();
      });
    },
  };
  return o;
}

/** Counts Batch requests and records how many calls each carried. */
export function batchCounter(): { interceptor: Interceptor; sizes: number[] } {
  const sizes: number[] = [];
  const interceptor: Interceptor = (next) => async (req) => {
    if (req.method.name === "Batch" && !req.stream) {
      const message = req.message as { batch?: unknown[] };
      sizes.push(message.batch?.length ?? 0);
    }
    return next(req);
  };
  return { interceptor, sizes };
}

/**
 * An in-memory TrackingService (Connect's router transport: the real
 * protocol code, no socket), for the client's own logic.
 */
export function memoryTransport(batch: ServiceImpl<typeof TrackingService>["batch"], interceptors: Interceptor[] = []) {
  return createRouterTransport(
    ({ service }) => {
      service(TrackingService, {
        batch,
        identify: unimplemented,
        track: unimplemented,
        page: unimplemented,
        screen: unimplemented,
        group: unimplemented,
        alias: unimplemented,
      });
    },
    { transport: { interceptors } },
  );
}

function unimplemented(): never {
  throw new Error("not used by the batching client");
}

/** A promise plus its resolve function, for handlers that wait on a test. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** Accept every call of a batch. */
export function acceptAll(req: { batch: unknown[] }) {
  return { accepted: req.batch.length, rejected: [], messageIds: [] };
}
