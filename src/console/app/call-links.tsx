import { useMay } from "./context.js";

/** The Profiles page's address that finds the profile holding an identifier (it opens the profile, or says there is none yet). */
export const profileHrefOf = (type: string, value: string) => `/console/profiles?identifier=${type}:${encodeURIComponent(value)}`;

/**
 * A link to the profile of a call's person, by its userId (else its
 * anonymousId), for those who may read profiles, after a space; nothing
 * without either id.
 */
export function ProfileLink(props: { userId: string; anonymousId?: string | undefined }) {
  const may = useMay();
  if (!may("ProfileService/GetProfile")) return null;
  const [type, value] = props.userId ? ["user_id", props.userId] : ["anonymous_id", props.anonymousId ?? ""];
  if (!value) return null;
  return (
    <>
      {" "}
      <a href={profileHrefOf(type, value)} title="The person across all their ids">
        Profile
      </a>
    </>
  );
}

/** A call's userId in a table's cell, linked to its profile (named "Profile of <userId>") for those who may read profiles. */
export function UserIdCell(props: { userId: string }) {
  const may = useMay();
  if (!props.userId) return <td>–</td>;
  if (!may("ProfileService/GetProfile")) return <td>{props.userId}</td>;
  return (
    <td>
      <a href={profileHrefOf("user_id", props.userId)} aria-label={`Profile of ${props.userId}`}>
        {props.userId}
      </a>
    </td>
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
