import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Destination, DestinationSchema } from "../../../gen/waypost/v1/destination_pb.js";

export interface HeaderDraft {
  name: string;
  value: string;
}

export interface WebhookDraft {
  url: string;
  headers: HeaderDraft[];
}

/** The destination form's state, as people edit it. */
export interface DestinationDraft {
  name: string;
  enabled: boolean;
  sourceIds: string[];
  webhooks: WebhookDraft[];
  /** keep the stored secret (edit only), set a new one, or clear it. */
  secretMode: "keep" | "set" | "clear";
  secret: string;
}

export function draftOf(destination: Destination | undefined): DestinationDraft {
  if (!destination) {
    return { name: "", enabled: true, sourceIds: [], webhooks: [{ url: "", headers: [] }], secretMode: "set", secret: "" };
  }
  return {
    name: destination.name,
    enabled: destination.enabled !== false,
    sourceIds: [...destination.sourceIds],
    webhooks: destination.webhooks.map((w) => ({
      url: w.url,
      headers: Object.entries(w.headers).map(([name, value]) => ({ name, value })),
    })),
    secretMode: "keep",
    secret: "",
  };
}

/** The resource to send, and (for an update) the mask naming what changes. */
export function toRequest(draft: DestinationDraft): { destination: MessageInitShape<typeof DestinationSchema>; paths: string[] } {
  const destination: MessageInitShape<typeof DestinationSchema> = {
    name: draft.name,
    enabled: draft.enabled,
    sourceIds: draft.sourceIds,
    webhooks: draft.webhooks.map((w) => ({
      url: w.url.trim(),
      headers: Object.fromEntries(w.headers.filter((h) => h.name.trim() !== "").map((h) => [h.name.trim(), h.value])),
    })),
  };
  const paths = ["name", "enabled", "source_ids", "webhooks"];
  if (draft.secretMode === "set" && draft.secret !== "") {
    destination.sharedSecret = draft.secret;
    paths.push("shared_secret");
  } else if (draft.secretMode === "clear") {
    destination.sharedSecret = "";
    paths.push("shared_secret");
  }
  return { destination, paths };
}
