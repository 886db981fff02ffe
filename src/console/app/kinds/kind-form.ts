import type { MessageInitShape } from "@bufbuild/protobuf";
import type { JSX } from "preact";
import type { Destination, DestinationSchema } from "../../../../gen/waypost/v1/destination_pb.js";
import type { RetryWording } from "../delivery-hold.js";
import type { FieldErrors } from "../field-error.js";

// What a kind's client file in this folder is, and what its fields receive:
// the kinds' files and the registry both use these shapes, so they live in
// neither.

export type DestinationInit = MessageInitShape<typeof DestinationSchema>;

/** What a kind's fields edit: its own part of the draft (D), nothing of another kind's. */
export interface KindFieldsProps<D> {
  draft: D;
  errors: FieldErrors;
  onChange(change: Partial<D>): void;
  /** The destination being edited; undefined while creating. */
  destination: Destination | undefined;
  /** After a rotation the form must send the new etag. */
  onRotated(destination: Destination): void;
}

/**
 * What the console knows of one kind: its part of the destination form's
 * draft (D) and how that goes to and from the API, its fields, and how the
 * lists and the delivery views speak of it. The form only loops over the
 * kinds (registry.ts).
 */
export interface KindForm<D> {
  /** This kind's part of the draft, from the destination being edited (undefined: a new one). */
  draft(destination: Destination | undefined): D;
  /** This kind's settings as a request carries them, and the mask paths they change. */
  request(draft: D): { fields: DestinationInit; paths: string[] };
  /** What the create request carries beside the destination. */
  create?(draft: D): { generateSigningSecret?: boolean };
  Fields(props: KindFieldsProps<D>): JSX.Element;
  /** Where its calls go, in the destinations list. */
  Where(props: { destination: Destination }): JSX.Element;
  /** Where its calls go, in a few words: tells destinations of one name apart. */
  tell(destination: Destination): string;
  /** What a retry does, in the delivery view's hint. */
  retry: RetryWording;
  /** Whether its attempts are HTTP requests with headers to show. */
  requestHeaders: boolean;
  /** Whether it stores values apart when they do not fit (the overview shows how many). */
  discards: boolean;
  /** What the page refuses before sending, by field path as the server names them (none: nothing). */
  check?(draft: D): FieldErrors;
  /**
   * The settings Test against recent calls sends with the rules, for a kind
   * whose test depends on them (an integration's requests); none: the rules only.
   */
  tested?(draft: D): DestinationInit;
}
