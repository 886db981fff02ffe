import { useEffect } from "preact/hooks";
import { AttemptOutcome, DeliveryStatus, type Delivery } from "../../../../gen/waypost/v1/delivery_pb.js";
import { EmptyRow, ErrorMessage, HeaderRow } from "../components.js";
import { useAction, useLoad } from "../context.js";
import { formatTime, statusLabels } from "../format.js";

const outcomes: Record<AttemptOutcome, string> = {
  [AttemptOutcome.UNSPECIFIED]: "",
  [AttemptOutcome.SUCCESS]: "success",
  [AttemptOutcome.RETRYABLE]: "retryable failure",
  [AttemptOutcome.PERMANENT]: "permanent failure",
  [AttemptOutcome.ABANDONED]: "abandoned",
};

const retryable = new Set([DeliveryStatus.FAILED, DeliveryStatus.EXPIRED, DeliveryStatus.RETRYING]);
const refreshMs = 2_000;

/** One delivery: the exact body and headers sent, every attempt, and Retry. */
export function DeliveryDetailView(props: { params: { id: string } }) {
  const id = props.params.id;
  const loaded = useLoad(async (api) => (await api.deliveries.getDelivery({ id })).delivery, [id]);
  const action = useAction();
  const delivery = loaded.data;
  const open = delivery?.status === DeliveryStatus.PENDING || delivery?.status === DeliveryStatus.RETRYING;
  useEffect(() => {
    if (!open) return;
    const timer = setTimeout(loaded.reload, refreshMs);
    return () => clearTimeout(timer);
  }, [open, delivery, loaded.reload]);

  async function retry() {
    await action.run((api) => api.deliveries.retryDelivery({ id }));
    loaded.reload();
  }

  return (
    <section>
      <h1>Delivery {id}</h1>
      <p>
        <a href="/console/deliveries">All deliveries</a>
      </p>
      <ErrorMessage error={loaded.error ?? action.error} />
      {delivery && (
        <>
          <Summary delivery={delivery} />
          <p>
            <button type="button" disabled={!retryable.has(delivery.status) || action.busy} onClick={retry}>
              Retry
            </button>
          </p>
          <h2 id="body-heading">Body</h2>
          <pre class="body" aria-labelledby="body-heading">
            {delivery.body}
          </pre>
          <RequestHeaders delivery={delivery} />
          <Attempts delivery={delivery} />
        </>
      )}
    </section>
  );
}

function Summary(props: { delivery: Delivery }) {
  const d = props.delivery;
  const rows: Array<[string, string]> = [
    ["Status", statusLabels[d.status]],
    ["Type", d.type],
    ["Message ID", d.messageId],
    ["User ID", d.userId || d.anonymousId],
    ["Destination", d.destinationId],
    ["Source", d.sourceId],
    ["Created", formatTime(d.createTime)],
    ["First attempt", formatTime(d.firstAttemptTime)],
    ["Next attempt", formatTime(d.nextAttemptTime)],
    ["Finished", formatTime(d.finalizeTime)],
    ["Attempts", String(d.attemptCount)],
  ];
  return (
    <dl class="props">
      {rows.map(([k, v]) => [<dt key={`${k}-t`}>{k}</dt>, <dd key={`${k}-d`}>{v || "–"}</dd>])}
    </dl>
  );
}

function RequestHeaders(props: { delivery: Delivery }) {
  const d = props.delivery;
  const groups = d.webhookHeaders.length > 0 ? d.webhookHeaders : [{ url: "", headers: d.requestHeaders }];
  return (
    <>
      <h2>Request headers</h2>
      <p class="hint">From the destination's current settings; secret values are masked.</p>
      {groups.map((group) => (
        <table key={group.url} aria-label={group.url ? `Request headers for ${group.url}` : "Request headers"}>
          {group.url && <caption>{group.url}</caption>}
          <HeaderRow columns={["Header", "Value"]} />
          <tbody>
            {Object.entries(group.headers).map(([name, value]) => (
              <tr key={name}>
                <td>
                  <code>{name}</code>
                </td>
                <td>
                  <code>{value}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ))}
    </>
  );
}

function Attempts(props: { delivery: Delivery }) {
  const attempts = props.delivery.attempts;
  return (
    <>
      <h2>Attempts</h2>
      <table aria-label="Attempts">
        <HeaderRow columns={["#", "Time", "URL", "Outcome", "Status", "Error", "Latency", "Response body"]} />
        <tbody>
          {attempts.length === 0 && <EmptyRow columns={8}>Not attempted yet.</EmptyRow>}
          {attempts.map((a) => (
            <tr key={`${a.attempt}-${a.url}`}>
              <td class="num">{a.attempt}</td>
              <td>{formatTime(a.attemptTime)}</td>
              <td>
                <code>{a.url}</code>
              </td>
              <td>{outcomes[a.outcome]}</td>
              <td class="num">{a.statusCode || "–"}</td>
              <td>{a.error}</td>
              <td class="num">{a.latencyMs} ms</td>
              <td>
                <code>{a.responseBody}</code>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}
