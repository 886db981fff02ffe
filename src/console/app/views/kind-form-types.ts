import type { MessageInitShape } from "@bufbuild/protobuf";
import type { JSX } from "preact";
import type { Destination, DestinationSchema } from "../../../../gen/waypost/v1/destination_pb.js";
import type { RetryWording } from "../delivery-hold.js";
import type { DestinationDraft } from "../destination-draft-types.js";
import type { FieldErrors } from "../field-error.js";

// What a kind's form is and what its fields receive: kind-forms.tsx lists the
// kinds' forms and the field components it lists take these props, so the
// shapes live in neither.

export type DestinationInit = MessageInitShape<typeof DestinationSchema>;

export interface KindFieldsProps {
  draft: DestinationDraft;
  errors: FieldErrors;
  onChange(change: Partial<DestinationDraft>): void;
  /** The destination being edited; undefined while creating. */
  destination: Destination | undefined;
  /** After a rotation the form must send the new etag. */
  onRotated(destination: Destination): void;
}

/**
 * What the console's destination form knows of one kind: its part of the
 * draft, how it goes into a request (with its update-mask paths), and its
 * fields. The form itself only loops over the kinds (descriptors.ts).
 */
export interface KindForm {
  /** This kind's part of the draft, from the destination being edited (undefined: a new one). */
  draft(destination: Destination | undefined): Partial<DestinationDraft>;
  /** This kind's settings as a request carries them, and the mask paths they change. */
  request(draft: DestinationDraft): { fields: DestinationInit; paths: string[] };
  Fields(props: KindFieldsProps): JSX.Element;
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
  check?(draft: DestinationDraft): FieldErrors;
  /**
   * The settings Test against recent calls sends with the rules, for a kind
   * whose test depends on them (an integration's requests); none: the rules only.
   */
  tested?(draft: DestinationDraft): DestinationInit;
}
