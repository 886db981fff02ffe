import { type Destination, DestinationKind } from "../../gen/waypost/v1/destination_pb.js";
import type { DestinationRow } from "../db/queries/destinations.js";
import type { DraftTester } from "../delivery/kinds/kind.js";
import { kindOf, registeredKinds, requireKindOfProto, type RegisteredKind } from "../delivery/kinds/registry.js";
import type { AddressGuard } from "../outbound/address-guard.js";
import type { CallMatcher } from "../routing/route-rules.js";

/** What a TestDestination draft's kind adds to the rules every destination has. */
export interface DraftKind {
  /** Its kind's routing (kinds/kind.ts `routing`) over the draft's settings; undefined: the kind takes every call. */
  matcher: CallMatcher | undefined;
  /** Its kind's test of each call let through (kinds/kind.ts `test`); undefined: such a call is SEND with its shaped body. */
  tester: DraftTester | undefined;
}

/**
 * The draft's kind, and what it adds. The kind is the one the draft names,
 * else the stored destination's (by id), else the one whose fields the
 * draft sets, else the first (as a create naming none). Only a kind with
 * routing or a test reads the draft's settings: over the stored
 * destination's as an update would (the fields the draft sets), or as a
 * create would (every field of the kind), so a draft is refused naming the
 * field as saving it would be.
 */
export function draftKindOf(
  input: Destination,
  existing: DestinationRow | undefined,
  context: { guard: AddressGuard; now: () => Date },
): DraftKind {
  const stored = existing ? kindOf(existing) : undefined;
  const kind = kindOfDraft(input, stored);
  if (!kind.routing && !kind.test) return { matcher: undefined, tester: undefined };
  const current = existing && kind === stored ? kind.settings.fromRow(existing) : undefined;
  const paths = kind.settings.fields.filter((field) => current === undefined || field.given(input, false)).map((field) => field.path);
  const settings = kind.settings.read(input, { paths: new Set(paths), current, guard: context.guard, now: context.now() });
  return { matcher: kind.routing?.matcher(settings), tester: kind.test?.(settings, context.now) };
}

function kindOfDraft(input: Destination, stored: RegisteredKind | undefined): RegisteredKind {
  if (input.kind !== DestinationKind.UNSPECIFIED) return requireKindOfProto("destination.kind", input.kind);
  if (stored) return stored;
  const named = registeredKinds.find((kind) => kind.settings.fields.some((field) => field.given(input, false)));
  return named ?? requireKindOfProto("destination.kind", input.kind);
}
