import { Ordering } from "../../gen/waypost/v1/destination_pb.js";
import { invalidArgument } from "./errors.js";
import { protoEnumNames } from "./proto-enums.js";

/** The highest per-destination rate limit: far above what one endpoint takes, low enough to keep bucket arithmetic exact. */
export const maxRequestsPerSecondLimit = 100_000;

/** How a destination orders its deliveries, as stored in destinations.ordering. */
export type StoredOrdering = "none" | "per_user";

/** 0 (no limit) to 100,000 requests per second. */
export function validateMaxRequestsPerSecond(field: string, value: number | undefined): number {
  const rate = value ?? 0;
  if (!Number.isInteger(rate) || rate < 0 || rate > maxRequestsPerSecondLimit) {
    throw invalidArgument(field, `must be a whole number from 0 (no limit) to ${maxRequestsPerSecondLimit}, got ${rate}`);
  }
  return rate;
}

/** ORDERING_UNSPECIFIED reads as ORDERING_NONE. */
const orderings = protoEnumNames<Ordering, StoredOrdering>({ none: Ordering.NONE, per_user: Ordering.PER_USER }, "none");

export function validateOrdering(field: string, value: Ordering): StoredOrdering {
  const name = orderings.nameOf(value);
  if (name === undefined) throw invalidArgument(field, `unknown ordering ${value}; use ORDERING_NONE or ORDERING_PER_USER`);
  return name;
}

export function orderingToProto(stored: StoredOrdering): Ordering {
  return orderings.valueOf(stored);
}
