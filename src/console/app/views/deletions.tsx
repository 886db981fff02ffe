import { useState } from "preact/hooks";
import { type DeletionRequest, DeletionStatus } from "../../../../gen/waypost/v1/deletion_pb.js";
import { DataTable, ErrorMessage } from "../components.js";
import { useAction, useLoad, useMay } from "../context.js";
import { formatTime } from "../format.js";
import { allSources } from "../paging.js";
import { enumWords } from "../../../enum-words.js";

const statuses = enumWords(DeletionStatus, { [DeletionStatus.UNSPECIFIED]: "" });

/** Deletion requests, newest first, with their notification counts; and a form to forget a user. */
export function DeletionsView() {
  const loaded = useLoad(
    async (api) => ({
      requests: (await api.deletions.listDeletionRequests({ pageSize: 100 })).deletionRequests,
      sources: await allSources(api),
    }),
    [],
  );
  const action = useAction();
  const may = useMay();
  const [userId, setUserId] = useState("");
  const sourceName = (id: string) => loaded.data?.sources.find((s) => s.id === id)?.name ?? id;

  async function create(event: Event) {
    event.preventDefault();
    const question = `Delete every stored call of user ${userId} and notify the destinations? This cannot be undone.`;
    const response = await action.confirmRun(question, (api) => api.deletions.createDeletionRequest({ userId: userId.trim() }));
    if (response) {
      setUserId("");
      loaded.reload();
    }
  }

  return (
    <section>
      <h1>Deletion requests</h1>
      {may("DeletionService/CreateDeletionRequest") && (
        <form class="inline" onSubmit={create}>
          <label for="deletion-user">User ID</label>
          <input id="deletion-user" value={userId} onInput={(e) => setUserId(e.currentTarget.value)} required />
          <button type="submit" class="danger" disabled={action.busy}>
            Create deletion request
          </button>
        </form>
      )}
      <ErrorMessage error={action.error ?? loaded.error} />
      <DataTable
        label="Deletion requests"
        columns={[
          "Created",
          "User ID",
          "Sources",
          "Status",
          "Messages deleted",
          "Notifications",
          "Delivered",
          "Failed",
          "Lake files",
          "Completed",
        ]}
        items={loaded.data?.requests}
        empty="No deletion requests."
        row={(r) => (
          <tr key={r.id}>
            <td>{formatTime(r.createTime)}</td>
            <td>{r.userId}</td>
            <td>{r.sourceIds.map(sourceName).join(", ")}</td>
            <td>{statuses[r.status]}</td>
            <td class="num">{r.messagesDeleted.toString()}</td>
            <td class="num">{r.notificationsTotal.toString()}</td>
            <td class="num">{r.notificationsDelivered.toString()}</td>
            <td class="num">{r.notificationsFailed.toString()}</td>
            <td>{lakeFiles(r)}</td>
            <td>{formatTime(r.completeTime)}</td>
          </tr>
        )}
      />
    </section>
  );
}

/** The lakes' files: "-" without a lake; else how many lakes are done, and the files scanned, rewritten and deleted. */
function lakeFiles(r: DeletionRequest): string {
  if (r.lakesTotal === 0n) return "-";
  const failed = r.lakesFailed > 0n ? `, ${r.lakesFailed} failed` : "";
  return `${r.lakesDone}/${r.lakesTotal} lakes${failed}: ${r.lakeFilesScanned} scanned, ${r.lakeFilesRewritten} rewritten, ${r.lakeFilesDeleted} deleted`;
}
