import type { ProfileMerge } from "../../../../gen/waypost/v1/profile_pb.js";
import { MessageLink } from "../call-links.js";
import { DataTable, ErrorMessage } from "../components.js";
import { useLoad } from "../context.js";
import { formatTime } from "../format.js";
import { SourceLink, useNames } from "../names.js";
import { Pager, usePageTokens } from "../pager.js";

/** Calls a timeline page shows. */
export const timelinePageSize = 20;

/** A profile's calls across every id, newest first, a page at a time. */
export function ProfileTimeline(props: { profileId: string }) {
  const { profileId } = props;
  const pages = usePageTokens(profileId);
  const { pageToken } = pages;
  const page = useLoad(
    (api) => api.profiles.listProfileEvents({ profileId, pageSize: timelinePageSize, pageToken }),
    [profileId, pageToken],
  );
  // Source names where the principal may list sources; their ids otherwise.
  const names = useNames();
  return (
    <>
      <h2>Timeline</h2>
      <p class="hint">Every call of every id of this person, newest first.</p>
      <ErrorMessage error={page.error} />
      <DataTable
        label="Timeline"
        columns={["Received", "Type", "Name", "User ID", "Source", "Message ID"]}
        items={page.data?.events}
        empty="No calls."
        row={(e) => (
          <tr key={`${e.sourceId}/${e.messageId}`}>
            <td>{formatTime(e.receiveTime)}</td>
            <td>{e.type}</td>
            <td>{e.name || "–"}</td>
            <td>{e.userId ? <code>{e.userId}</code> : "–"}</td>
            <td>
              <SourceLink id={e.sourceId} names={names.data} />
            </td>
            <td>
              <MessageLink messageId={e.messageId} sourceId={e.sourceId} />
            </td>
          </tr>
        )}
      />
      <Pager pages={pages} nextPageToken={page.data?.nextPageToken}>
        <button type="button" class="quiet" onClick={page.reload}>
          Refresh
        </button>
      </Pager>
    </>
  );
}

/** What a history entry's kind reads as. */
const kindLabels: Record<string, string> = {
  created: "Created",
  merged: "Merged",
  left_out: "Identifier left out",
  deleted: "Deleted",
};

function detailOf(m: ProfileMerge) {
  if (m.kind === "merged") {
    return (
      <>
        <code>{m.mergedProfileId}</code> merged into <code>{m.profileId}</code>
      </>
    );
  }
  if (m.kind === "left_out") {
    return (
      <>
        <code>
          {m.identifier?.type}:{m.identifier?.value}
        </code>{" "}
        was not linked: {m.reason || "no reason given"}
      </>
    );
  }
  return <code>{m.profileId}</code>;
}

/** What happened to the profile and those merged into it, newest first: made, merged, identifiers left out and why, deleted. */
export function ProfileHistory(props: { profileId: string }) {
  const { profileId } = props;
  const loaded = useLoad(async (api) => (await api.profiles.listProfileMerges({ profileId })).merges, [profileId]);
  return (
    <>
      <h2>History</h2>
      <ErrorMessage error={loaded.error} />
      <DataTable
        label="History"
        columns={["Time", "What", "Details", "By message"]}
        items={loaded.data}
        empty="No history."
        row={(m) => (
          <tr key={`${m.kind}/${m.profileId}/${m.mergedProfileId}/${m.messageId}/${m.identifier?.type}:${m.identifier?.value}`}>
            <td>{formatTime(m.time)}</td>
            <td>{kindLabels[m.kind] ?? m.kind}</td>
            <td>{detailOf(m)}</td>
            <td>
              <MessageLink messageId={m.messageId} />
            </td>
          </tr>
        )}
      />
    </>
  );
}
