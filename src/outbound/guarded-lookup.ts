import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import type { LookupFunction } from "node:net";
import type { AddressGuard } from "./address-guard.js";

/** A broker connection refused by the address guard. */
export class RefusedBrokerAddressError extends Error {
  override name = "RefusedBrokerAddressError";
  readonly code = "EWAYPOST_REFUSED_ADDRESS";
}

/**
 * A `lookup` for net.connect / tls.connect that runs the address guard on
 * every address the broker's name resolves to, before the socket opens: a
 * public name pointing at a private address is refused as a webhook's is.
 * (Literal IPs skip lookup: check them with refuseLiteralHost first.)
 */
export function guardedLookup(guard: AddressGuard): LookupFunction {
  return ((hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error);
      for (const entry of addresses) {
        const reason = guard.refuse(entry.address);
        if (reason) return callback(new RefusedBrokerAddressError(`${hostname} resolves to ${reason}`));
      }
      if (options.all) return callback(null, addresses);
      const first = addresses[0];
      if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: "ENOTFOUND" }));
      callback(null, first.address, first.family);
    });
  }) as LookupFunction;
}
