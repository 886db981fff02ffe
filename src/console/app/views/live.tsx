import { useEffect, useRef, useState } from "preact/hooks";
import { DeliveryOrder, DeliveryView, type Delivery } from "../../../../gen/waypost/v1/delivery_pb.js";
import { EmptyRow, ErrorMessage, HeaderRow } from "../components.js";
import { useLoad, useSession } from "../context.js";
import { describeError, isUnauthenticated } from "../errors.js";
import { formatTime, statusLabels } from "../format.js";
import { listAll } from "../paging.js";

/** Polling the finish feed every second keeps a new delivery on screen within 2 s. */
const pollMs = 1_000;
const keep = 200;

/**
 * Deliveries as they finish, newest first. The finish feed's page token
 * says where the last poll ended; each poll brings exactly what finished
 * since. Pause stops polling; Resume picks up everything finished meanwhile.
 */
export function LiveView() {
  const { api, signOut } = useSession();
  const [rows, setRows] = useState<Delivery[]>([]);
  const [paused, setPaused] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const token = useRef("");
  const destinations = useLoad(
    (api) => listAll((t) => api.destinations.listDestinations({ pageToken: t, pageSize: 100 }), (r) => r.destinations),
    [],
  );
  const destinationName = (id: string) => destinations.data?.find((d) => d.id === id)?.name ?? id;

  useEffect(() => {
    if (paused) return;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    async function poll() {
      try {
        const response = await api.deliveries.listDeliveries({
          order: DeliveryOrder.FINISH_TIME_DESC,
          view: DeliveryView.BASIC,
          pageSize: 100,
          pageToken: token.current,
        });
        if (stopped) return;
        token.current = response.nextPageToken;
        setError(undefined);
        if (response.deliveries.length > 0) {
          setRows((current) => {
            const seen = new Set(response.deliveries.map((d) => d.id));
            return [...response.deliveries, ...current.filter((d) => !seen.has(d.id))].slice(0, keep);
          });
        }
      } catch (caught) {
        if (stopped) return;
        if (isUnauthenticated(caught)) signOut(describeError(caught));
        setError(describeError(caught));
      }
      if (!stopped) timer = setTimeout(poll, pollMs);
    }
    void poll();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [paused, api, signOut]);

  return (
    <section>
      <h1>Live</h1>
      <p>
        <button type="button" onClick={() => setPaused((p) => !p)}>
          {paused ? "Resume" : "Pause"}
        </button>{" "}
        <span class="hint" role="status">
          {paused ? "Paused." : "Following deliveries as they finish."}
        </span>
      </p>
      <ErrorMessage error={error} />
      <table aria-label="Finished deliveries">
        <HeaderRow columns={["Finished", "ID", "Destination", "Type", "Message ID", "User ID", "Status", "Attempts"]} />
        <tbody>
          {rows.length === 0 && <EmptyRow columns={8}>Nothing has finished yet.</EmptyRow>}
          {rows.map((d) => (
            <tr key={d.id}>
              <td>{formatTime(d.finalizeTime)}</td>
              <td>
                <a href={`/console/deliveries/${d.id}`}>{d.id}</a>
              </td>
              <td>{destinationName(d.destinationId)}</td>
              <td>{d.type}</td>
              <td>
                <code>{d.messageId}</code>
              </td>
              <td>{d.userId || d.anonymousId}</td>
              <td class={`status-${statusLabels[d.status]}`}>{statusLabels[d.status]}</td>
              <td class="num">{d.attemptCount}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
