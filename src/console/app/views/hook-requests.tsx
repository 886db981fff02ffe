import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { useState } from "preact/hooks";
import { HookRequestStatus, type HookRequest } from "../../../../gen/waypost/v1/hook_pb.js";
import { EmptyRow, ErrorMessage, HeaderRow } from "../components.js";
import { useAction, useLoad, useMay } from "../context.js";
import { formatTime } from "../format.js";
import { prettyBody } from "../body-view.js";
import { enumWords } from "../../../enum-words.js";

const statusLabels = enumWords(HookRequestStatus, { [HookRequestStatus.UNSPECIFIED]: "unknown" });

/**
 * The requests a webhook source received, newest first: status, body
 * (folded), the calls made (each linking to its page), errors, and
 * Reprocess for the ticked ones or every failed one.
 */
export function HookRequests(props: { sourceId: string }) {
  const [status, setStatus] = useState<HookRequestStatus>(HookRequestStatus.UNSPECIFIED);
  const requests = useLoad(
    async (api) => (await api.hooks.listHookRequests({ sourceId: props.sourceId, status, pageSize: 100 })).requests,
    [props.sourceId, status],
  );
  const action = useAction();
  const may = useMay();
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const [notice, setNotice] = useState<string | undefined>();

  async function reprocess(requestIds: string[]) {
    const all = requestIds.length === 0;
    if (all && !confirm("Run every failed request of this source again?")) return;
    // Every failed one: the RPC takes a range without ids, so since the epoch (retention bounds what is kept).
    const since = all ? timestampFromDate(new Date(0)) : undefined;
    const response = await action.run((api) => api.hooks.reprocessHookRequests({ sourceId: props.sourceId, requestIds, since }));
    if (!response) return;
    const n = Number(response.requeued);
    setNotice(`${n} ${n === 1 ? "request" : "requests"} set to run again.`);
    setSelected(new Set());
    requests.reload();
  }
  const toggle = (id: string, on: boolean) =>
    setSelected((s) => {
      const next = new Set(s);
      if (on) next.add(id);
      else next.delete(id);
      return next;
    });

  return (
    <section aria-labelledby="hook-requests-heading">
      <h2 id="hook-requests-heading">Requests</h2>
      <div class="inline">
        <label>
          Status
          <select value={String(status)} onChange={(e) => setStatus(Number(e.currentTarget.value) as HookRequestStatus)}>
            <option value={String(HookRequestStatus.UNSPECIFIED)}>All</option>
            {[HookRequestStatus.PENDING, HookRequestStatus.PROCESSED, HookRequestStatus.FAILED, HookRequestStatus.DUPLICATE].map((s) => (
              <option key={s} value={String(s)}>
                {statusLabels[s]}
              </option>
            ))}
          </select>
        </label>
        <button type="button" onClick={() => requests.reload()}>
          Refresh
        </button>
        {may("HookService/ReprocessHookRequests") && (
          <>
            <button type="button" disabled={action.busy || selected.size === 0} onClick={() => reprocess([...selected])}>
              Reprocess selected
            </button>
            <button type="button" disabled={action.busy} onClick={() => reprocess([])}>
              Reprocess all failed
            </button>
          </>
        )}
      </div>
      <ErrorMessage error={action.error ?? requests.error} />
      {notice && (
        <p class="hint" role="status">
          {notice}
        </p>
      )}
      <table aria-label="Requests">
        <HeaderRow columns={["", "ID", "Received", "Status", "Body", "Calls", "Error"]} />
        <tbody>
          {requests.data?.length === 0 && <EmptyRow columns={7}>No requests yet.</EmptyRow>}
          {requests.data?.map((r) => (
            <RequestRow key={r.id} request={r} selected={selected.has(r.id)} onToggle={(on) => toggle(r.id, on)} />
          ))}
        </tbody>
      </table>
    </section>
  );
}

function RequestRow(props: { request: HookRequest; selected: boolean; onToggle(on: boolean): void }) {
  const r = props.request;
  return (
    <tr id={`request-${r.id}`}>
      <td>
        <input
          type="checkbox"
          aria-label={`Select request ${r.id}`}
          checked={props.selected}
          onChange={(e) => props.onToggle(e.currentTarget.checked)}
        />
      </td>
      <td>{r.id}</td>
      <td>{formatTime(r.receiveTime)}</td>
      <td>{statusLabels[r.status]}</td>
      <td>
        <details>
          <summary>
            {r.contentType || "no content type"}, {r.bodyBytes} bytes
          </summary>
          <pre class="body">{prettyBody(r.body)}</pre>
        </details>
      </td>
      <td>
        {r.messageIds.length === 0
          ? "–"
          : r.messageIds.map((id) => (
              <div key={id}>
                <a href={`/console/messages/${encodeURIComponent(id)}?source=${r.sourceId}`}>{id}</a>
              </div>
            ))}
      </td>
      <td>{r.error ? <span class="error">{r.error}</span> : "–"}</td>
    </tr>
  );
}
