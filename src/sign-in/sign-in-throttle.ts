import type { Clock } from "../clock.js";
import { countPendingSignIns } from "../db/queries/access/sign-in-attempts.js";
import type { Queryable } from "../db/pool.js";
import type { Req } from "../http/types.js";
import { createHookRateLimiter } from "../ingest/hooks/hook-rate-limit.js";
import { clientAddressOf, SignInRefusal } from "./sign-in-request.js";

// The sign-in routes answer anyone, and a login or a CLI start leaves a row
// (a sign-in under way), a callback an audit row: a flood from one address
// is slowed by a token bucket per address (the webhook sources' limiter,
// keyed by address here), and the rows a flood from many can leave are
// capped. A person signing in makes two or three such requests.

export interface SignInThrottleOptions {
  pool: Queryable;
  clock: Clock;
  /** Requests a second (and burst) per client address. */
  perSecond?: number;
  /** Sign-ins under way at once, past which new ones wait. */
  maxPending?: number;
}

export interface SignInThrottle {
  /** Refuses (429) a request over its address's rate. */
  take(req: Req): void;
  /** Refuses (503) a new sign-in while too many are under way. */
  roomForAnother(): Promise<void>;
}

export function createSignInThrottle(options: SignInThrottleOptions): SignInThrottle {
  const limiter = createHookRateLimiter({ clock: options.clock });
  const perSecond = options.perSecond ?? 5;
  const maxPending = options.maxPending ?? 10_000;
  return {
    take(req) {
      const address = clientAddressOf(req);
      const decision = limiter.take(address, perSecond, "refused");
      if (!decision.ok) {
        throw new SignInRefusal(429, `too many sign-in requests from ${address}: try again in ${decision.retryAfterSeconds} s`);
      }
    },
    async roomForAnother() {
      if ((await countPendingSignIns(options.pool, options.clock.now())) >= maxPending) {
        throw new SignInRefusal(503, "too many sign-ins are under way: try again in a few minutes");
      }
    },
  };
}
