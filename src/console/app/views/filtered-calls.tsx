import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { useState } from "preact/hooks";
import { useLocation } from "preact-iso";
import { Fate, type ListFatesRequest } from "../../../../gen/waypost/v1/delivery_pb.js";
import { UserIdCell } from "../call-links.js";
import { EmptyRow, ErrorMessage, HeaderRow } from "../components.js";
import { useLoad } from "../context.js";
import { fateLabels, formatTime } from "../format.js";
import { SourceLink, useNames } from "../names.js";
import { Pager, usePageTokens } from "../pager.js";

const pageSize = 50;

/** The reasons the page offers, in the address as ?reason=. */
const reasons: ReadonlyArray<{ key: string; label: string; request: Pick<ListFatesRequest, "fate" | "reason"> }> = [
  { key: "filtered", label: "Any rule", request: { fate: Fate.FILTERED, reason: "" } },
  { key: "filter", label: "Filter", request: { fate: Fate.FILTERED, reason: "filter" } },
  { key: "consent", label: "Consent", request: { fate: Fate.FILTERED, reason: "consent" } },
  { key: "subscriptions", label: "Subscriptions", request: { fate: Fate.FILTERED, reason: "subscriptions" } },
  { key: "transform", label: "Transform", request: { fate: Fate.FILTERED, reason: "transform" } },
  { key: "disabled", label: "Disabled", request: { fate: Fate.DISABLED, reason: "" } },
  { key: "integrations-off", label: "Integrations off", request: { fate: Fate.INTEGRATIONS_OFF, reason: "" } },
];

/**
 * The calls a destination got no delivery for (ListFates), newest first:
 * what the overview's filtered count counts. `?minutes=` limits it to the
 * count's window; `?reason=` to one reason.
 */
export function FilteredCallsView(props: { params: { id: string } }) {
  const destinationId = props.params.id;
  const { query } = useLocation();
  const reason = reasons.find((r) => r.key === query.reason) ?? reasons[0]!;
  const minutes = Number(query.minutes);
  const window = Number.isInteger(minutes) && minutes > 0 ? minutes : undefined;
  // The window's start, fixed when the page opens, so "More" pages one list.
  const [since] = useState(() => (window ? new Date(Date.now() - window * 60_000) : undefined));
  const pages = usePageTokens(reason.key);
  const { pageToken } = pages;
  const names = useNames();
  const page = useLoad(
    (api) =>
      api.deliveries.listFates({
        destinationId,
        ...reason.request,
        ...(since ? { since: timestampFromDate(since) } : {}),
        pageSize,
        pageToken,
      }),
    [destinationId, reason.key, pageToken],
  );
  const destination = names.data?.destinations.find((d) => d.id === destinationId);
  const base = `/console/destinations/${destinationId}/filtered?${window ? `minutes=${window}&` : ""}reason=`;
  return (
    <section>
      <h1>Calls {destination?.name ?? destinationId} got no delivery for</h1>
      <p class="hint">
        Newest first
        {since
          ? `, recorded since ${since
              .toISOString()
              .replace("T", " ")
              .replace(/\.\d+Z$/, "Z")}`
          : ""}
        . <a href={`/console/destinations/${destinationId}`}>The destination's rules</a>
      </p>
      <nav class="period" aria-label="Reason">
        {reasons.map((r) => (
          <a key={r.key} href={`${base}${r.key}`} aria-current={r === reason ? "true" : undefined}>
            {r.label}
          </a>
        ))}
      </nav>
      <ErrorMessage error={page.error ?? names.error} />
      <table aria-label="Calls without a delivery">
        <HeaderRow columns={["Recorded", "Message ID", "Source", "Type", "Event", "User ID", "Fate", "Reason"]} />
        <tbody>
          {page.data?.calls.length === 0 && <EmptyRow columns={8}>No calls.</EmptyRow>}
          {page.data?.calls.map((c) => (
            <tr key={`${c.sourceId}/${c.messageId}`}>
              <td>{formatTime(c.recordTime)}</td>
              <td>
                <a href={`/console/messages/${encodeURIComponent(c.messageId)}?source=${c.sourceId}`}>
                  <code>{c.messageId}</code>
                </a>
              </td>
              <td>
                <SourceLink id={c.sourceId} names={names.data} />
              </td>
              <td>{c.type}</td>
              <td>{c.event || "–"}</td>
              <UserIdCell userId={c.userId} />
              <td>{fateLabels[c.fate]}</td>
              <td>{c.reason || "–"}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <Pager pages={pages} nextPageToken={page.data?.nextPageToken} />
    </section>
  );
}
