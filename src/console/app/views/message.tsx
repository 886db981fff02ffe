import { useLocation } from "preact-iso";
import { BodyView } from "../body-view.js";
import { ProfileLink } from "../call-links.js";
import { EmptyRow, ErrorMessage, HeaderRow } from "../components.js";
import { useLoad } from "../context.js";
import { fateLabels, formatTime } from "../format.js";
import { sharedNames } from "../twins.js";
import { TwinHint } from "../names.js";

/** One stored call and what happened to it at every destination (ExplainMessage). */
export function MessageView(props: { params: { id: string } }) {
  const messageId = decodeURIComponent(props.params.id);
  const { query } = useLocation();
  const sourceId = query.source ?? "";
  const loaded = useLoad((api) => api.deliveries.explainMessage({ messageId, sourceId }), [messageId, sourceId]);
  const call = loaded.data?.call;
  const shared = sharedNames((loaded.data?.destinations ?? []).map((d) => ({ name: d.destinationName })));
  return (
    <section>
      <h1>Message {messageId}</h1>
      <ErrorMessage error={loaded.error} />
      {call && (
        <>
          <dl class="fields">
            <dt>Type</dt>
            <dd>{call.type}</dd>
            <dt>Event</dt>
            <dd>{call.event || "–"}</dd>
            <dt>User ID</dt>
            <dd>
              {call.userId || "–"}
              <ProfileLink userId={call.userId} />
            </dd>
            <dt>Received</dt>
            <dd>{formatTime(call.receiveTime)}</dd>
          </dl>
          <table aria-label="Fate at every destination">
            <HeaderRow columns={["Destination", "Fate", "Reason", "Delivery", "Attempts"]} />
            <tbody>
              {loaded.data!.destinations.length === 0 && <EmptyRow columns={5}>No destinations.</EmptyRow>}
              {loaded.data!.destinations.map((d) => (
                <tr key={d.destinationId}>
                  <td>
                    <a href={`/console/destinations/${d.destinationId}`}>{d.destinationName}</a>
                    {shared.has(d.destinationName) && <TwinHint text={d.destinationId.slice(0, 8)} />}
                  </td>
                  <td>{fateLabels[d.fate]}</td>
                  <td>{d.reason || "–"}</td>
                  <td>{d.deliveryId ? <a href={`/console/deliveries/${d.deliveryId}`}>{d.deliveryId}</a> : "–"}</td>
                  <td class="num">{d.deliveryId ? String(d.attemptCount) : "–"}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <h2>Stored body</h2>
          <BodyView body={call.body} />
        </>
      )}
    </section>
  );
}
