import type { Clock } from "./clock.js";
import type { Closer } from "./closers.js";
import type { Queryable } from "./db/pool.js";
import type { IdentityConfig } from "./identity-config.js";
import { createIdentityResolver, type IdentityResolver } from "./identity/identity-resolver.js";
import type { Logger } from "./logger.js";

/** The identity resolver of a delivering process (WAYPOST_IDENTITY=off, or Citus: none), started, and stopped with it. */
export function openIdentityResolver(options: {
  pool: Queryable;
  clock: Clock;
  logger: Logger;
  config: IdentityConfig;
  /** Whether the job table reads calls by cursor (one Postgres): on Citus a transaction id orders nothing across shards. */
  callLog: boolean;
  closers: Closer[];
}): IdentityResolver | undefined {
  if (!options.config.enabled) return undefined;
  if (!options.callLog) {
    options.logger.warn("identity resolution is off: it reads calls by cursor, which a Citus job table does not offer");
    return undefined;
  }
  const resolver = createIdentityResolver(options);
  resolver.start();
  options.closers.push(() => resolver.stop());
  return resolver;
}
