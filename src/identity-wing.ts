import type { Clock } from "./clock.js";
import type { Closer } from "./closers.js";
import type { Queryable } from "./db/pool.js";
import type { IdentityConfig } from "./identity-config.js";
import { createIdentityResolver, type IdentityResolver } from "./identity/identity-resolver.js";
import type { Logger } from "./logger.js";

/** The identity resolver of a delivering process (WAYPOST_IDENTITY=off: none), started, and stopped with it. */
export function openIdentityResolver(options: {
  pool: Queryable;
  clock: Clock;
  logger: Logger;
  config: IdentityConfig;
  closers: Closer[];
}): IdentityResolver | undefined {
  if (!options.config.enabled) return undefined;
  const resolver = createIdentityResolver(options);
  resolver.start();
  options.closers.push(() => resolver.stop());
  return resolver;
}
