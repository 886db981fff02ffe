import { useEffect, useRef, useState } from "preact/hooks";
import { useLocation } from "preact-iso";
import { DeliveryOrder, DeliveryStatus, DeliveryView, type Delivery } from "../../../../gen/waypost/v1/delivery_pb.js";
import { EmptyRow, ErrorMessage, HeaderRow } from "../components.js";
import { DestinationSelect } from "../destination-select.js";
import { useSession } from "../context.js";
import { statusOf } from "../delivery-filter.js";
import { describeError, isUnauthenticated } from "../errors.js";
import { formatDate, formatTime, statusLabels } from "../format.js";
import { useNames } from "../names.js";
import { DeliveryCells } from "./delivery-cells.js";

/** Polling the finish feed every second keeps a new delivery on screen within 2 s. */
const pollMs = 1_000;
const keep = 200;
/** Only final states reach the finish feed. */
const finalStatuses = [DeliveryStatus.DELIVERED, DeliveryStatus.FAILED, DeliveryStatus.EXPIRED, DeliveryStatus.CANCELLED];

/**
 * Deliveries as they finish, newest first, from the moment the page opened
 * (or its filter changed): the first read only takes the feed's position,
 * so what finished before is not mixed in with what is happening now. The
 * finish feed's page token says where the last poll ended; each poll
 * brings exactly what finished since. Pause stops polling; Resume picks up
 * everything finished meanwhile. The filter (destination, status) lives in
 * the query string.
 */
export function LiveView() {
  const { api, signOut } = useSession();
  const { query, path, route } = useLocation();
  const destination = query.destination ?? "";
  const status = query.status ?? "";
  const [rows, setRows] = useState<Delivery[]>([]);
  const [paused, setPaused] = useState(false);
  const [since, setSince] = useState<Date | undefined>();
  const [error, setError] = useState<string | undefined>();
  const token = useRef("");
  const names = useNames();

  // A new filter is a new feed: its position starts again from now.
  useEffect(() => {
    token.current = "";
    setRows([]);
    setSince(undefined);
  }, [destination, status]);

  useEffect(() => {
    if (paused) return;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const chosen = statusOf(status);
    async function poll() {
      try {
        const starting = token.current === "";
        const response = await api.deliveries.listDeliveries({
          order: DeliveryOrder.FINISH_TIME_DESC,
          view: DeliveryView.BASIC,
          destinationId: destination,
          ...(chosen !== undefined ? { status: chosen } : {}),
          // The first read is for the position only.
          pageSize: starting ? 1 : 100,
          pageToken: token.current,
        });
        if (stopped) return;
        token.current = response.nextPageToken;
        setError(undefined);
        if (starting) setSince(new Date());
        else if (response.deliveries.length > 0) {
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
  }, [paused, api, signOut, destination, status]);

  const apply = (next: { destination: string; status: string }) => {
    const params = new URLSearchParams();
    if (next.destination) params.set("destination", next.destination);
    if (next.status) params.set("status", next.status);
    const text = params.toString();
    route(`${path}${text ? `?${text}` : ""}`);
  };

  return (
    <section>
      <h1>Live</h1>
      {/* biome-ignore lint/a11y/useSemanticElements: role="search" on the form is the search landmark; see delivery-filters.tsx */}
      <form class="filters" role="search" aria-label="Filter live deliveries" onSubmit={(e) => e.preventDefault()}>
        <DestinationSelect
          value={destination}
          destinations={names.data?.destinations}
          onChange={(id) => apply({ destination: id, status })}
        />
        <label>
          Status
          <select value={status} onChange={(e) => apply({ destination, status: e.currentTarget.value })}>
            <option value="">Any final status</option>
            {finalStatuses.map((s) => (
              <option key={s} value={statusLabels[s]}>
                {statusLabels[s]}
              </option>
            ))}
          </select>
        </label>
      </form>
      <p>
        <button type="button" onClick={() => setPaused((p) => !p)}>
          {paused ? "Resume" : "Pause"}
        </button>{" "}
        <span class="hint" role="status">
          {paused ? "Paused." : since ? `Following deliveries that finished since ${formatDate(since)}.` : "Starting…"}
        </span>
      </p>
      <ErrorMessage error={error ?? names.error} />
      <table aria-label="Finished deliveries">
        <HeaderRow columns={["Finished", "ID", "Destination", "Type", "Message ID", "User ID", "Status", "Attempts"]} />
        <tbody>
          {rows.length === 0 && <EmptyRow columns={8}>Nothing has finished since the page opened.</EmptyRow>}
          {rows.map((d) => (
            <tr key={d.id}>
              <td>{formatTime(d.finalizeTime)}</td>
              <td>
                <a href={`/console/deliveries/${d.id}`}>{d.id}</a>
              </td>
              <DeliveryCells delivery={d} names={names.data} />
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
