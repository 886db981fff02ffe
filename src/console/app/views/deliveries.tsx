import { DeliveryStatus, DeliveryView } from "../../../../gen/waypost/v1/delivery_pb.js";
import { useEffect, useState } from "preact/hooks";
import { useLocation } from "preact-iso";
import { EmptyRow, ErrorMessage, HeaderRow } from "../components.js";
import { useLoad } from "../context.js";
import { filterFromQuery, filterToQuery, filterToRequest } from "../delivery-filter.js";
import { formatTime, statusLabels } from "../format.js";
import { listAll } from "../paging.js";
import { DeliveryFilters } from "./delivery-filters.js";
import { RetryAllMatching } from "./retry-all-matching.js";

const pageSize = 50;
/** While some listed deliveries are still pending or retrying, the page refreshes itself. */
const openRefreshMs = 2_000;

/** Deliveries: filtered by destination, status, messageId, userId and creation time; paged. */
export function DeliveriesView() {
  const { query, path, route } = useLocation();
  const filter = filterFromQuery(query);
  const filterKey = filterToQuery(filter);
  // Tokens of the pages before the current one, for "Previous page".
  const [tokens, setTokens] = useState<string[]>([""]);
  useEffect(() => setTokens([""]), [filterKey]);
  const pageToken = tokens[tokens.length - 1]!;

  const destinations = useLoad(
    (api) => listAll((t) => api.destinations.listDestinations({ pageToken: t, pageSize: 100 }), (r) => r.destinations),
    [],
  );
  const page = useLoad(
    (api) => api.deliveries.listDeliveries({ ...filterToRequest(filter), pageSize, pageToken, view: DeliveryView.BASIC }),
    [filterKey, pageToken],
  );
  const open = page.data?.deliveries.some((d) => d.status === DeliveryStatus.PENDING || d.status === DeliveryStatus.RETRYING);
  useEffect(() => {
    if (!open) return;
    const timer = setTimeout(page.reload, openRefreshMs);
    return () => clearTimeout(timer);
  }, [open, page.data, page.reload]);

  const destinationName = (id: string) => destinations.data?.find((d) => d.id === id)?.name ?? id;
  return (
    <section>
      <h1>Deliveries</h1>
      <DeliveryFilters
        key={filterKey}
        filter={filter}
        destinations={destinations.data ?? []}
        onApply={(next) => route(`${path}${filterToQuery(next)}`)}
      />
      <RetryAllMatching filter={filter} onQueued={page.reload} />
      <ErrorMessage error={page.error ?? destinations.error} />
      <table aria-label="Deliveries">
        <HeaderRow columns={["ID", "Created", "Destination", "Type", "Message ID", "User ID", "Status", "Attempts", "Finished"]} />
        <tbody>
          {page.data?.deliveries.length === 0 && <EmptyRow columns={9}>No deliveries match.</EmptyRow>}
          {page.data?.deliveries.map((d) => (
            <tr key={d.id}>
              <td>
                <a href={`/console/deliveries/${d.id}`} aria-label={`Delivery ${d.id}`}>
                  {d.id}
                </a>
              </td>
              <td>{formatTime(d.createTime)}</td>
              <td>{destinationName(d.destinationId)}</td>
              <td>{d.type}</td>
              <td>
                <code>{d.messageId}</code>
              </td>
              <td>{d.userId || d.anonymousId}</td>
              <td class={`status-${statusLabels[d.status]}`}>{statusLabels[d.status]}</td>
              <td class="num">{d.attemptCount}</td>
              <td>{formatTime(d.finalizeTime)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <div class="pager">
        <button type="button" class="quiet" disabled={tokens.length <= 1} onClick={() => setTokens((t) => t.slice(0, -1))}>
          Previous page
        </button>
        <button
          type="button"
          class="quiet"
          disabled={!page.data?.nextPageToken}
          onClick={() => page.data && setTokens((t) => [...t, page.data!.nextPageToken])}
        >
          Next page
        </button>
        <button type="button" class="quiet" onClick={page.reload}>
          Refresh
        </button>
        <span class="hint">Page {tokens.length}</span>
      </div>
    </section>
  );
}
