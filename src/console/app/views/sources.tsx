import { useState } from "preact/hooks";
import { EmptyRow, ErrorMessage, HeaderRow, SecretOnce } from "../components.js";
import { useAction, useLoad } from "../context.js";
import { formatTime } from "../format.js";
import { listAll } from "../paging.js";

/** Sources: list, create (the write key shown once), rotate a key, delete. */
export function SourcesView() {
  const sources = useLoad(
    (api) =>
      listAll(
        (pageToken) => api.sources.listSources({ pageToken, pageSize: 100 }),
        (r) => r.sources,
      ),
    [],
  );
  const action = useAction();
  const [name, setName] = useState("");
  const [shownKey, setShownKey] = useState<{ label: string; value: string } | undefined>();

  async function create(event: Event) {
    event.preventDefault();
    const response = await action.run((api) => api.sources.createSource({ source: { name } }));
    if (!response?.source) return;
    setShownKey({ label: `Write key of ${response.source.name}.`, value: response.source.writeKey });
    setName("");
    sources.reload();
  }
  async function rotate(id: string, sourceName: string) {
    if (!confirm(`Rotate the write key of ${sourceName}? The current key stops working at once.`)) return;
    const response = await action.run((api) => api.sources.rotateWriteKey({ id }));
    if (response?.source) setShownKey({ label: `New write key of ${sourceName}.`, value: response.source.writeKey });
  }
  async function remove(id: string, sourceName: string) {
    if (!confirm(`Delete the source ${sourceName}? Its write key stops working.`)) return;
    await action.run((api) => api.sources.deleteSource({ id }));
    sources.reload();
  }

  return (
    <section>
      <h1>Sources</h1>
      <form class="inline" onSubmit={create}>
        <label for="source-name">Name</label>
        <input id="source-name" value={name} onInput={(e) => setName(e.currentTarget.value)} required maxLength={200} />
        <button type="submit" disabled={action.busy}>
          Create source
        </button>
      </form>
      <ErrorMessage error={action.error ?? sources.error} />
      {shownKey && <SecretOnce label={shownKey.label} value={shownKey.value} onDismiss={() => setShownKey(undefined)} />}
      <table aria-label="Sources">
        <HeaderRow columns={["Name", "ID", "Created", "Actions"]} />
        <tbody>
          {sources.data?.length === 0 && <EmptyRow columns={4}>No sources yet.</EmptyRow>}
          {sources.data?.map((s) => (
            <tr key={s.id} id={`source-${s.id}`}>
              <td>{s.name}</td>
              <td>
                <code>{s.id}</code>
              </td>
              <td>{formatTime(s.createTime)}</td>
              <td class="actions">
                <a href={`/console/plans/${s.id}`} aria-label={`Tracking plan of ${s.name}`}>
                  Tracking plan
                </a>
                <button type="button" aria-label={`Rotate key of ${s.name}`} onClick={() => rotate(s.id, s.name)}>
                  Rotate key
                </button>
                <button type="button" class="danger" aria-label={`Delete ${s.name}`} onClick={() => remove(s.id, s.name)}>
                  Delete
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
