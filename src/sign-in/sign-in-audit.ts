import type { Clock } from "../clock.js";
import { insertAuditEvent } from "../db/queries/access/audit-events.js";
import type { Queryable } from "../db/pool.js";
import type { Req } from "../http/types.js";
import { clientAddressOf, requestIdOf, userAgentOf } from "./sign-in-request.js";

// The audit rows of sign-in, sign-out and refused sign-ins. What a row
// holds is chosen here, in one place, so that no code, token, state or
// session id can reach it: only who, what, the outcome in words, and where
// the request came from.

export type SignInAction = "session.sign_in" | "session.sign_in_failed" | "session.sign_out";

export interface SignInAuditEvent {
  action: SignInAction;
  /** The signed-in user; absent for a refusal before one was known (then `anonymous`, named by the email if any). */
  user?: { id: string; email: string } | undefined;
  email?: string | undefined;
  /** "ok", or why the sign-in was refused. */
  outcome: string;
  target?: { kind: string; id: string } | undefined;
  /** How the person signed in: "browser" or "cli". */
  via?: "browser" | "cli" | undefined;
}

export interface SignInAudit {
  record(req: Req, event: SignInAuditEvent): Promise<void>;
}

export function createSignInAudit(options: { pool: Queryable; clock: Clock }): SignInAudit {
  return {
    async record(req, event) {
      await insertAuditEvent(options.pool, {
        at: options.clock.now(),
        actor_kind: event.user ? "user" : "anonymous",
        actor_id: event.user?.id ?? "",
        actor_name: (event.user?.email ?? event.email ?? "").slice(0, 320),
        action: event.action,
        target_kind: event.target?.kind ?? "",
        target_id: event.target?.id ?? "",
        diff: event.via ? { via: event.via } : null,
        outcome: event.outcome.slice(0, 500),
        request_id: requestIdOf(req),
        client_address: clientAddressOf(req),
        user_agent: userAgentOf(req),
      });
    },
  };
}
