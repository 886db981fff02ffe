import type { Destination } from "../../../../gen/waypost/v1/destination_pb.js";
import { descriptorOfProto, type KindName, kindDescriptors } from "../../../delivery/kinds/descriptors.js";
import { amqpForm } from "./amqp.js";
import { integrationForm } from "./integration.js";
import type { KindForm } from "./kind-form.js";
import { lakeForm } from "./lake.js";
import { natsForm } from "./nats.js";
import { postgresForm } from "./postgres.js";
import { webhookForm } from "./webhook.js";

// The console's kinds: one client file each in this folder, one entry here.

const forms = {
  webhook: webhookForm,
  postgres: postgresForm,
  amqp: amqpForm,
  nats: natsForm,
  integration: integrationForm,
  lake: lakeForm,
};

type DraftOf<F> = F extends KindForm<infer D> ? D : never;

/** Each kind's part of the destination form's draft, by kind name. */
export type KindDrafts = { [K in KindName]: DraftOf<(typeof forms)[K]> };

/** Each kind's form, by kind name: a kind without an entry does not compile. */
export const kindForms: { [K in KindName]: KindForm<KindDrafts[K]> } = forms;

/** The form of a destination's kind (unspecified reads as webhooks, as the server treats it). */
export function kindFormOf(destination: Pick<Destination, "kind">) {
  return kindForms[descriptorOfProto(destination.kind).name];
}

/**
 * Every kind's part of the draft: the destination's own from it, the others
 * empty, so switching the kind on create keeps what was typed for each.
 */
export function kindDraftsOf(destination: Destination | undefined): KindDrafts {
  const own = destination && descriptorOfProto(destination.kind).name;
  // One entry per kind, each from its own form: the object is a KindDrafts by construction.
  return Object.fromEntries(
    kindDescriptors.map(({ name }) => [name, kindForms[name].draft(name === own ? destination : undefined)]),
  ) as KindDrafts;
}

/**
 * A kind's form with its part of the draft, typed together (the form of
 * `kind` takes the part of `kind`): what the destination form works with.
 */
export function ownKind<K extends KindName>(kind: K, drafts: KindDrafts): { form: KindForm<KindDrafts[K]>; part: KindDrafts[K] } {
  return { form: kindForms[kind], part: drafts[kind] };
}

/** The drafts with `change` made to the part of `kind`. */
export function changeKind<K extends KindName>(drafts: KindDrafts, kind: K, change: Partial<KindDrafts[K]>): KindDrafts {
  return { ...drafts, [kind]: { ...drafts[kind], ...change } };
}
