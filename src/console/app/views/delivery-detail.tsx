import type { ComponentChild } from "preact";
import { useEffect } from "preact/hooks";
import { Code, ConnectError } from "@connectrpc/connect";
import { AttemptOutcome, DeliveryStatus, type Delivery, type DeliveryAttempt } from "../../../../gen/waypost/v1/delivery_pb.js";
import type { Destination } from "../../../../gen/waypost/v1/destination_pb.js";
import { AttemptRequests, BatchDeliveries } from "./attempt-requests.js";
import { kindFormOf } from "../kinds/registry.js";
import { BodyView } from "../body-view.js";
import { ProfileLink } from "../call-links.js";
import { EmptyRow, ErrorMessage, HeaderRow, HeadersTable } from "../components.js";
import { useAction, useLoad, useMay } from "../context.js";
import { holdOf, retryableStatuses, retryHint } from "../delivery-hold.js";
import { formatTime, statusLabels } from "../format.js";
import { DestinationLink, SourceLink, useNames, type Names } from "../names.js";
import { enumWords } from "../../../enum-words.js";

const outcomes = enumWords(AttemptOutcome, {
  [AttemptOutcome.UNSPECIFIED]: "",
  [AttemptOutcome.RETRYABLE]: "retryable failure",
  [AttemptOutcome.PERMANENT]: "permanent failure",
});

const refreshMs = 2_000;

/** One delivery: the exact body and headers sent, every attempt, what holds it, and Retry. */
export function DeliveryDetailView(props: { params: { id: string } }) {
  const id = props.params.id;
  // The destination is read with every refresh: whether its circuit holds the delivery changes.
  const loaded = useLoad(
    async (api) => {
      const delivery = (await api.deliveries.getDelivery({ id })).delivery;
      const destination = delivery
        ? await api.destinations.getDestination({ id: delivery.destinationId }).then(
            (r) => r.destination,
            (error: unknown) => {
              if (error instanceof ConnectError && error.code === Code.NotFound) return undefined;
              throw error;
            },
          )
        : undefined;
      return { delivery, destination };
    },
    [id],
  );
  const names = useNames();
  const action = useAction();
  const may = useMay();
  const delivery = loaded.data?.delivery;
  // Unknown until the destination is read (or when it is gone).
  const kind = loaded.data?.destination ? kindFormOf(loaded.data.destination) : undefined;
  const open = delivery?.status === DeliveryStatus.PENDING || delivery?.status === DeliveryStatus.RETRYING;
  useEffect(() => {
    if (!open) return;
    const timer = setTimeout(loaded.reload, refreshMs);
    return () => clearTimeout(timer);
  }, [open, loaded.data, loaded.reload]);

  async function retry() {
    await action.run((api) => api.deliveries.retryDelivery({ id }));
    loaded.reload();
  }

  const hold = delivery && holdOf(delivery, loaded.data?.destination, new Date());
  return (
    <section>
      <h1>Delivery {id}</h1>
      <p>
        <a href="/console/deliveries">All deliveries</a>
      </p>
      <ErrorMessage error={loaded.error ?? action.error} />
      {delivery && (
        <>
          {hold && (
            <p role="status" class="held">
              {hold}
            </p>
          )}
          <Summary delivery={delivery} destination={loaded.data?.destination} names={names.data} held={hold !== undefined} />
          {may("DeliveryService/RetryDelivery") && (
            <p class="retry">
              <button
                type="button"
                disabled={!retryableStatuses.has(delivery.status) || action.busy}
                aria-describedby="retry-hint"
                onClick={retry}
              >
                Retry
              </button>{" "}
              <span id="retry-hint" class="hint">
                {retryHint(delivery, hold !== undefined, kind?.retry)}
              </span>
            </p>
          )}
          <BodyView body={delivery.body} stored={delivery.requestsInAttempts} />
          {/* A kind that sends no HTTP requests (a warehouse) has no headers to show; one that builds its own shows each attempt's. */}
          {delivery.requestsInAttempts ? (
            <AttemptRequests attempts={delivery.attempts} />
          ) : (
            (kind?.requestHeaders ?? true) && <RequestHeaders delivery={delivery} />
          )}
          <Attempts delivery={delivery} />
        </>
      )}
    </section>
  );
}

function Summary(props: { delivery: Delivery; destination: Destination | undefined; names: Names | undefined; held: boolean }) {
  const d = props.delivery;
  // Names from the fresh destination first: it was just read.
  const names: Names | undefined = props.destination
    ? { destinations: [props.destination], sources: props.names?.sources ?? [] }
    : props.names;
  const nextAttempt = props.held ? "held (see above)" : formatTime(d.nextAttemptTime);
  const rows: Array<[string, ComponentChild]> = [
    ["Status", statusLabels[d.status]],
    ["Type", d.type],
    [
      "Message ID",
      <a href={`/console/messages/${encodeURIComponent(d.messageId)}?source=${d.sourceId}`} title="Its fate at every destination">
        {d.messageId}
      </a>,
    ],
    [
      "User ID",
      (d.userId || d.anonymousId) && (
        <>
          {d.userId || d.anonymousId}
          <ProfileLink userId={d.userId} anonymousId={d.anonymousId} />
        </>
      ),
    ],
    ["Destination", <DestinationLink id={d.destinationId} names={names} />],
    ["Source", <SourceLink id={d.sourceId} names={names} />],
    ["Created", formatTime(d.createTime)],
    ["First attempt", formatTime(d.firstAttemptTime)],
    ["Next attempt", nextAttempt],
    ["Finished", formatTime(d.finalizeTime)],
    ["Attempts", String(d.attemptCount)],
  ];
  return <dl class="props">{rows.map(([k, v]) => [<dt key={`${k}-t`}>{k}</dt>, <dd key={`${k}-d`}>{v || "–"}</dd>])}</dl>;
}

function RequestHeaders(props: { delivery: Delivery }) {
  const d = props.delivery;
  const groups = d.webhookHeaders.length > 0 ? d.webhookHeaders : [{ url: "", headers: d.requestHeaders }];
  return (
    <>
      <h2>Request headers</h2>
      <p class="hint">From the destination's current settings; secret values are masked.</p>
      {groups.map((group) => (
        <HeadersTable
          key={group.url}
          label={group.url ? `Request headers for ${group.url}` : "Request headers"}
          caption={group.url || undefined}
          headers={group.headers}
        />
      ))}
    </>
  );
}

/**
 * Every attempt. An integration's attempts are its actions' requests, each
 * named by the subscription that made it and its method: those columns are
 * shown when some attempt has them.
 */
function Attempts(props: { delivery: Delivery }) {
  const attempts = props.delivery.attempts;
  const named = attempts.some((a) => a.subscription !== "" || a.method !== "");
  // Attempts made as part of a batch operation (one POST for many calls) say which one.
  const batched = attempts.some((a) => a.batchId !== "");
  const columns = [
    "#",
    "Time",
    ...(named ? ["Subscription", "Method"] : []),
    "URL",
    "Outcome",
    "Status",
    "Error",
    "Latency",
    "Response body",
    ...(batched ? ["Batch"] : []),
  ];
  return (
    <>
      <h2>Attempts</h2>
      <table aria-label="Attempts">
        <HeaderRow columns={columns} />
        <tbody>
          {attempts.length === 0 && <EmptyRow columns={columns.length}>Not attempted yet.</EmptyRow>}
          {attempts.map((a, i) => (
            <tr key={`${a.attempt}-${a.url}-${i}`}>
              <td class="num">{a.attempt}</td>
              <td>{formatTime(a.attemptTime)}</td>
              {named && <td>{a.subscription || "–"}</td>}
              {named && <td>{a.method || "–"}</td>}
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
              {batched && <td>{a.batchId ? <BatchCell attempt={a} /> : "–"}</td>}
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

/** The batch operation an attempt was part of: its id, and the other calls that went with it. */
function BatchCell(props: { attempt: DeliveryAttempt }) {
  const others = props.attempt.batchCalls - 1;
  return (
    <span>
      <code>{props.attempt.batchId}</code> with {others} other {others === 1 ? "call" : "calls"}
      <BatchDeliveries attempt={props.attempt} />
    </span>
  );
}
