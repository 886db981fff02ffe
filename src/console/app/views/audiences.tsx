import { AudienceKind } from "../../../../gen/waypost/v1/audience_pb.js";
import { DataTable, ErrorMessage } from "../components.js";
import { useLoad } from "../context.js";
import { formatTime } from "../format.js";
import { allSources, listAll } from "../paging.js";
import { enumWords } from "../../../enum-words.js";

const kinds = enumWords(AudienceKind, { [AudienceKind.UNSPECIFIED]: "" });

/** Audiences and computed traits, with their member counts and last sync. */
export function AudiencesView() {
  const loaded = useLoad(
    async (api) => ({
      audiences: await listAll(
        (pageToken) => api.audiences.listAudiences({ pageToken, pageSize: 100 }),
        (r) => r.audiences,
      ),
      sources: await allSources(api),
    }),
    [],
  );
  const sourceName = (id: string) => loaded.data?.sources.find((s) => s.id === id)?.name ?? id;
  return (
    <section>
      <h1>Audiences</h1>
      <p class="hint">Audiences are created and synced through the API (AudienceService) or the waypost command.</p>
      <ErrorMessage error={loaded.error} />
      <DataTable
        label="Audiences"
        columns={["Name", "Key", "Kind", "Source", "Members", "Last sync", "Created"]}
        items={loaded.data?.audiences}
        empty="No audiences yet."
        row={(a) => (
          <tr key={a.id}>
            <td>{a.name}</td>
            <td>
              <code>{a.key}</code>
            </td>
            <td>{kinds[a.kind]}</td>
            <td>{sourceName(a.sourceId)}</td>
            <td class="num">{a.memberCount.toString()}</td>
            <td>{a.lastSyncTime ? formatTime(a.lastSyncTime) : "never"}</td>
            <td>{formatTime(a.createTime)}</td>
          </tr>
        )}
      />
    </section>
  );
}
