import { useEffect, useState } from "preact/hooks";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { JobState } from "../../../../gen/waypost/v1/job_pb.js";
import { DataTable, ErrorMessage } from "../components.js";
import { useAction, useLoad, useMay } from "../context.js";
import { formatTime } from "../format.js";
import { JobProgress, jobStateLabels } from "../job-progress.js";

const shown = 5;
const columns = ["Started", "Calls received", "State", "Progress", "Candidates", "Created", "Filtered", ""];

/**
 * A destination's backfills (the newest few, with their counts, read again
 * every second while one runs), a form to start one, and Cancel for a
 * running one. The backfill itself runs on the server, as a job.
 */
export function Backfills(props: { destinationId: string }) {
  const { destinationId } = props;
  const loaded = useLoad((api) => api.destinations.listBackfills({ destinationId, pageSize: shown }), [destinationId]);
  const action = useAction(loaded.reload);
  const may = useMay();
  const [days, setDays] = useState("7");
  const backfills = loaded.data?.backfills ?? [];
  const running = backfills.some((b) => b.state === JobState.RUNNING);
  useEffect(() => {
    if (!running) return;
    const timer = setTimeout(loaded.reload, 1_000);
    return () => clearTimeout(timer);
  }, [running, loaded.data, loaded.reload]);

  async function start(event: Event) {
    event.preventDefault();
    const since = new Date(Date.now() - Number(days) * 86_400_000);
    await action.run((api) => api.destinations.backfillDestination({ destinationId, since: timestampFromDate(since) }));
  }
  const cancel = (id: string) => action.run((api) => api.destinations.cancelBackfill({ id }));

  return (
    <section aria-labelledby="backfills-heading">
      <h2 id="backfills-heading">Backfills</h2>
      {may("DestinationService/BackfillDestination") && (
        <form class="inline" onSubmit={start}>
          <label>
            Days back <input type="number" min="1" max="365" value={days} onInput={(e) => setDays((e.target as HTMLInputElement).value)} />
          </label>
          <button type="submit" disabled={action.busy}>
            Backfill
          </button>
          <span class="hint">
            Creates deliveries for retained calls of that period that this destination has none for and that pass its filter.
          </span>
        </form>
      )}
      <ErrorMessage error={action.error ?? loaded.error} />
      <DataTable
        label="Backfills"
        columns={columns}
        items={backfills}
        empty="No backfills yet."
        row={(b) => (
          <tr key={b.id}>
            <td>{formatTime(b.createTime)}</td>
            <td>
              {formatTime(b.since)} to {formatTime(b.until)}
              {b.fromArchive && <div class="hint">from archive {b.fromArchive}</div>}
            </td>
            <td title={b.error}>
              {jobStateLabels[b.state]}
              {b.error && b.state !== JobState.RUNNING ? `: ${b.error}` : ""}
            </td>
            <td>
              {/* A replay counts no candidates up front: its calls are those read from the archive so far. */}
              <JobProgress
                state={b.state}
                done={b.created + b.filtered}
                total={b.fromArchive ? b.archiveCallsRead : b.candidates}
                label={`Backfill ${b.id} progress`}
              />
            </td>
            <td>{b.fromArchive ? `${b.archiveCallsRead} read` : String(b.candidates)}</td>
            <td>{String(b.created)}</td>
            <td>{String(b.filtered)}</td>
            <td>
              {b.state === JobState.RUNNING && may("DestinationService/CancelBackfill") && (
                <button type="button" disabled={action.busy} onClick={() => cancel(b.id)}>
                  Cancel
                </button>
              )}
            </td>
          </tr>
        )}
      />
    </section>
  );
}
