import type { Destination } from "../../../../gen/waypost/v1/destination_pb.js";
import { SharedSecretFields, type SecretMode } from "../views/shared-secret-fields.js";
import { SigningSecretFields } from "../views/signing-secret-fields.js";
import { batchDraftOf, batchRequestOf } from "../views/webhook-batch-fields.js";
import { type WebhookDraft, WebhookFields } from "../views/webhook-fields.js";
import type { DestinationInit, KindForm } from "./kind-form.js";

/**
 * A webhook destination's part of the form: the URLs and headers, the shared
 * secret (kept, set or cleared) and, on create, whether to ask for a
 * Standard Webhooks signing secret.
 */
export interface WebhookKindDraft {
  webhooks: WebhookDraft[];
  secretMode: SecretMode;
  secret: string;
  generateSigningSecret: boolean;
}

const webhooksOf = (destination: Destination): WebhookDraft[] =>
  destination.webhooks.map((w) => ({
    url: w.url,
    headers: Object.entries(w.headers).map(([name, value]) => ({ name, value })),
    batch: batchDraftOf(w.batch),
  }));

export const webhookForm: KindForm<WebhookKindDraft> = {
  draft: (destination) => ({
    webhooks: destination ? webhooksOf(destination) : [{ url: "", headers: [] }],
    secretMode: destination ? "keep" : "set",
    secret: "",
    generateSigningSecret: false,
  }),
  request(draft) {
    const fields: DestinationInit = {
      webhooks: draft.webhooks.map((w) => ({
        url: w.url.trim(),
        headers: Object.fromEntries(w.headers.filter((h) => h.name.trim() !== "").map((h) => [h.name.trim(), h.value])),
        batch: batchRequestOf(w.batch),
      })),
    };
    const paths = ["webhooks"];
    if (draft.secretMode === "set" && draft.secret !== "") {
      fields.sharedSecret = draft.secret;
      paths.push("shared_secret");
    } else if (draft.secretMode === "clear") {
      fields.sharedSecret = "";
      paths.push("shared_secret");
    }
    return { fields, paths };
  },
  create: (draft) => ({ generateSigningSecret: draft.generateSigningSecret }),
  Fields: ({ draft, errors, onChange, destination, onRotated }) => (
    <>
      <WebhookFields webhooks={draft.webhooks} errors={errors} onChange={(webhooks) => onChange({ webhooks })} />
      <SharedSecretFields mode={draft.secretMode} secret={draft.secret} errors={errors} onChange={onChange} destination={destination} />
      <SigningSecretFields
        destination={destination}
        generate={draft.generateSigningSecret}
        onGenerateChange={(generateSigningSecret) => onChange({ generateSigningSecret })}
        onRotated={onRotated}
      />
    </>
  ),
  Where: ({ destination }) => (
    <>
      {destination.webhooks.map((w) => (
        <div key={w.url}>
          <code>{w.url}</code>
        </div>
      ))}
    </>
  ),
  tell: (d) => d.webhooks[0]?.url ?? "",
  retry: { now: "Sends it", again: "Sends it again now to every webhook" },
  requestHeaders: true,
  discards: false,
};
