import { useLocation } from "preact-iso";
import type { AuditEvent } from "../../../../gen/waypost/v1/access_pb.js";
import { diffLines } from "../audit-diff.js";
import { auditFilterFromQuery, auditFilterToQuery, auditFilterToRequest } from "../audit-filter.js";
import { DataTable, ErrorMessage } from "../components.js";
import { useLoad } from "../context.js";
import { formatTime } from "../format.js";
import { Pager, usePageTokens } from "../pager.js";
import { AuditFilters } from "./audit-filters.js";

const pageSize = 50;

/**
 * The audit log, newest first, 50 a page: who did what to what, whether it
 * went through, and what changed (secrets only as "changed"). The filter
 * (actor, target, action or an action prefix, time range) lives in the
 * page's query string.
 */
export function AuditLogView() {
  const { query, path, route } = useLocation();
  const filter = auditFilterFromQuery(query);
  const filterKey = auditFilterToQuery(filter);
  const pages = usePageTokens(filterKey);
  const { pageToken } = pages;
  const page = useLoad(
    (api) => api.audit.listAuditEvents({ ...auditFilterToRequest(filter), pageSize, pageToken }),
    [filterKey, pageToken],
  );
  return (
    <section>
      <h1>Audit log</h1>
      <AuditFilters key={filterKey} filter={filter} onApply={(next) => route(`${path}${auditFilterToQuery(next)}`)} />
      <ErrorMessage error={page.error} />
      <DataTable
        label="Audit log"
        columns={["Time", "Actor", "Action", "Target", "Outcome", "Changes"]}
        items={page.data?.events}
        empty="No events match."
        row={(e) => <AuditRow key={e.id} event={e} />}
      />
      <Pager pages={pages} nextPageToken={page.data?.nextPageToken}>
        <button type="button" class="quiet" onClick={page.reload}>
          Refresh
        </button>
      </Pager>
    </section>
  );
}

function AuditRow(props: { event: AuditEvent }) {
  const e = props.event;
  const changes = diffLines(e.diff);
  return (
    <tr>
      <td>{formatTime(e.time)}</td>
      <td title={`${e.actorKind} ${e.actorId}`}>
        {e.actorName || e.actorId}
        {e.clientAddress && <div class="hint">{e.clientAddress}</div>}
      </td>
      <td>
        <code>{e.action}</code>
      </td>
      <td>
        {e.targetKind} {e.targetId && <code>{e.targetId}</code>}
      </td>
      <td>{e.outcome}</td>
      <td class="diff">
        {changes.length === 0
          ? "–"
          : changes.map((line) => (
              <div key={line}>
                <code>{line}</code>
              </div>
            ))}
      </td>
    </tr>
  );
}
