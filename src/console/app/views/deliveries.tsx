import { DeliveryStatus, DeliveryView } from "../../../../gen/waypost/v1/delivery_pb.js";
import { useEffect, useState } from "preact/hooks";
import { useLocation } from "preact-iso";
import { EmptyRow, ErrorMessage, HeaderRow } from "../components.js";
import { useLoad, useMay } from "../context.js";
import { filterFromQuery, filterToQuery, filterToRequest } from "../delivery-filter.js";
import { formatTime } from "../format.js";
import { useNames } from "../names.js";
import { DeliveryCells } from "./delivery-cells.js";
import { DeliveryFilters } from "./delivery-filters.js";
import { RetryAllMatching } from "./retry-all-matching.js";
import { Pager, usePageTokens } from "../pager.js";

const pageSize = 50;
/** While some listed deliveries are still pending or retrying, the page refreshes itself. */
const openRefreshMs = 2_000;
/**
 * Refreshes after "Retry all matching": the server replays in the
 * background, so the first reload may come before any delivery has moved
 * and show nothing open to keep refreshing for. Once the replay's first
 * batch has moved some, their open rows keep the page refreshing; 15
 * refreshes (about 30 s) leave that batch ample time.
 */
const refreshesAfterReplay = 15;

/** Deliveries: filtered by destination, status, messageId, userId and creation time; paged. */
export function DeliveriesView() {
  const { query, path, route } = useLocation();
  const filter = filterFromQuery(query);
  const filterKey = filterToQuery(filter);
  const pages = usePageTokens(filterKey);
  const { pageToken } = pages;

  const names = useNames();
  const may = useMay();
  const [replayRefreshes, setReplayRefreshes] = useState(0);
  const page = useLoad(
    (api) => api.deliveries.listDeliveries({ ...filterToRequest(filter), pageSize, pageToken, view: DeliveryView.BASIC }),
    [filterKey, pageToken],
  );
  const open = page.data?.deliveries.some((d) => d.status === DeliveryStatus.PENDING || d.status === DeliveryStatus.RETRYING);
  const following = replayRefreshes > 0;
  useEffect(() => {
    if (!open && !following) return;
    const timer = setTimeout(() => {
      setReplayRefreshes((n) => Math.max(0, n - 1));
      page.reload();
    }, openRefreshMs);
    return () => clearTimeout(timer);
  }, [open, following, page.data, page.reload]);
  return (
    <section>
      <h1>Deliveries</h1>
      <DeliveryFilters
        key={filterKey}
        filter={filter}
        destinations={names.data?.destinations ?? []}
        onApply={(next) => route(`${path}${filterToQuery(next)}`)}
      />
      {may("DeliveryService/RetryDeliveries") && (
        <RetryAllMatching
          filter={filter}
          onQueued={() => {
            setReplayRefreshes(refreshesAfterReplay);
            page.reload();
          }}
        />
      )}
      <ErrorMessage error={page.error ?? names.error} />
      <table aria-label="Deliveries">
        <HeaderRow
          columns={["ID", "Created", "Destination", "Type", "Message ID", "User ID", "Status", "Attempts", "Last error", "Finished"]}
        />
        <tbody>
          {page.data?.deliveries.length === 0 && <EmptyRow columns={10}>No deliveries match.</EmptyRow>}
          {page.data?.deliveries.map((d) => (
            <tr key={d.id}>
              <td>
                <a href={`/console/deliveries/${d.id}`} aria-label={`Delivery ${d.id}`}>
                  {d.id}
                </a>
              </td>
              <td>{formatTime(d.createTime)}</td>
              <DeliveryCells delivery={d} names={names.data} />
              <td class="last-error" title={d.lastError || undefined}>
                {d.lastError || "–"}
              </td>
              <td>{formatTime(d.finalizeTime)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <Pager pages={pages} nextPageToken={page.data?.nextPageToken}>
        <button type="button" class="quiet" onClick={page.reload}>
          Refresh
        </button>
      </Pager>
    </section>
  );
}
