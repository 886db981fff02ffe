import { DestinationKind } from "../../../../gen/waypost/v1/destination_pb.js";
import { type IntegrationDraft, integrationDraftOf, integrationProblems, integrationRequestOf } from "../integration-draft.js";
import { IntegrationFields } from "../views/integration-fields.js";
import type { KindForm } from "./kind-form.js";

/** An integration destination: its part of the form is the catalog entry, its settings as typed and the subscriptions (integration-draft.ts). */
export const integrationForm: KindForm<IntegrationDraft> = {
  draft: integrationDraftOf,
  request: (draft) => ({ fields: { integration: integrationRequestOf(draft) }, paths: ["integration"] }),
  check: integrationProblems,
  tested: (draft) => ({ kind: DestinationKind.INTEGRATION, integration: integrationRequestOf(draft) }),
  Fields: (props) => (
    <IntegrationFields draft={props.draft} errors={props.errors} creating={props.destination === undefined} onChange={props.onChange} />
  ),
  Where: ({ destination: { integration } }) => (
    <div>
      {integration && (
        <>
          <code>{integration.slug}</code> ({integration.subscriptions.length}{" "}
          {integration.subscriptions.length === 1 ? "subscription" : "subscriptions"})
        </>
      )}
    </div>
  ),
  tell: (d) => (d.integration ? `integration ${d.integration.slug}` : ""),
  retry: { now: "Runs its matching subscriptions", again: "Runs its matching subscriptions again now" },
  requestHeaders: false,
  discards: false,
};
