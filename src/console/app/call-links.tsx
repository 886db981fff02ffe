import { useMay } from "./context.js";

/** The Profiles page's address that finds the profile holding an identifier (it opens the profile, or says there is none yet). */
export const profileHrefOf = (type: string, value: string) => `/console/profiles?identifier=${type}:${encodeURIComponent(value)}`;

/**
 * A link to the profile of a call's person, by its userId (else its
 * anonymousId), for those who may read profiles; nothing without either
 * id. `label`: an accessible name of its own, where several are listed.
 */
export function ProfileLink(props: { userId: string; anonymousId?: string | undefined; label?: string }) {
  const may = useMay();
  if (!may("ProfileService/GetProfile")) return null;
  const [type, value] = props.userId ? ["user_id", props.userId] : ["anonymous_id", props.anonymousId ?? ""];
  if (!value) return null;
  return (
    <>
      {" "}
      <a href={profileHrefOf(type, value)} class="profile-link" aria-label={props.label} title="The person across all their ids">
        Profile
      </a>
    </>
  );
}

/**
 * A call's message id, linked to its message page (its fate at every
 * destination) for those who may read it; `sourceId` when known (a message
 * id several sources used needs it).
 */
export function MessageLink(props: { messageId: string; sourceId?: string | undefined }) {
  const may = useMay();
  if (!props.messageId) return <>–</>;
  if (!may("DeliveryService/ExplainMessage")) return <code>{props.messageId}</code>;
  const source = props.sourceId ? `?source=${props.sourceId}` : "";
  return (
    <a href={`/console/messages/${encodeURIComponent(props.messageId)}${source}`}>
      <code>{props.messageId}</code>
    </a>
  );
}
