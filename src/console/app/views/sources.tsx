import { useState } from "preact/hooks";
import { SourceKind } from "../../../../gen/waypost/v1/source_pb.js";
import { DataTable, ErrorMessage, SecretOnce } from "../components.js";
import { useAction, useLoad, useMay, useSession } from "../context.js";
import { useFormSubmit } from "../form-submit.js";
import { formatTime } from "../format.js";
import { checkHookDraft, hookDraftOf, inboundUrlOf, webhookOf, type HookDraft } from "../hook-draft.js";
import { allSources } from "../paging.js";
import { HookSettingsFields } from "./hook-settings-fields.js";

/**
 * Sources: list, create (an SDK source's write key, or a webhook source's
 * inbound URL, shown once), rotate a key, delete. A source's own page
 * (its name) has a webhook source's settings and requests.
 */
export function SourcesView() {
  const sources = useLoad(allSources, []);
  const { api } = useSession();
  const may = useMay();
  const action = useAction(sources.reload);
  const [name, setName] = useState("");
  const [kind, setKind] = useState<SourceKind>(SourceKind.SDK);
  const [hook, setHook] = useState<HookDraft>(() => hookDraftOf(undefined));
  const { errors, formError: createError, busy: creating, submit } = useFormSubmit("source");
  const [shownKey, setShownKey] = useState<{ label: string; value: string } | undefined>();

  async function create(event: Event) {
    event.preventDefault();
    const webhook = kind === SourceKind.WEBHOOK;
    await submit(webhook ? checkHookDraft(hook) : {}, async () => {
      const response = await api.sources.createSource({
        source: webhook ? { name, kind, webhook: webhookOf(hook) } : { name },
      });
      const source = response.source;
      if (!source) return;
      // A webhook source is reached through its URL: its token is what to keep.
      setShownKey(
        webhook
          ? { label: `Inbound URL of ${source.name}.`, value: inboundUrlOf(source.hookToken) }
          : { label: `Write key of ${source.name}.`, value: source.writeKey },
      );
      setName("");
      setHook(hookDraftOf(undefined));
      sources.reload();
    });
  }
  async function rotate(id: string, sourceName: string) {
    const question = `Rotate the write key of ${sourceName}? The current key stops working at once.`;
    const response = await action.confirmRun(question, (a) => a.sources.rotateWriteKey({ id }));
    if (response?.source) setShownKey({ label: `New write key of ${sourceName}.`, value: response.source.writeKey });
  }
  const remove = (id: string, sourceName: string) =>
    action.confirmRun(`Delete the source ${sourceName}? Its write key stops working.`, (a) => a.sources.deleteSource({ id }));

  return (
    <section>
      <h1>Sources</h1>
      {may("SourceService/CreateSource") && (
        <form class={kind === SourceKind.WEBHOOK ? "stacked" : "inline"} onSubmit={create}>
          <label for="source-name">Name</label>
          <input id="source-name" value={name} onInput={(e) => setName(e.currentTarget.value)} required maxLength={200} />
          <label for="source-kind">Kind</label>
          <select id="source-kind" value={String(kind)} onChange={(e) => setKind(Number(e.currentTarget.value) as SourceKind)}>
            <option value={String(SourceKind.SDK)}>SDK (calls with a write key)</option>
            <option value={String(SourceKind.WEBHOOK)}>Webhook (a SaaS tool posts to its URL)</option>
          </select>
          {kind === SourceKind.WEBHOOK && (
            <HookSettingsFields draft={hook} errors={errors} existing={false} onChange={(c) => setHook((d) => ({ ...d, ...c }))} />
          )}
          <button type="submit" disabled={creating}>
            Create source
          </button>
        </form>
      )}
      <ErrorMessage error={createError ?? errors.name ?? action.error ?? sources.error} />
      {shownKey && <SecretOnce label={shownKey.label} value={shownKey.value} onDismiss={() => setShownKey(undefined)} />}
      <DataTable
        label="Sources"
        columns={["Name", "Kind", "ID", "Created", "Actions"]}
        items={sources.data}
        empty="No sources yet."
        row={(s) => (
          <tr key={s.id} id={`source-${s.id}`}>
            <td>
              <a href={`/console/sources/${s.id}`}>{s.name}</a>
            </td>
            <td>{s.kind === SourceKind.WEBHOOK ? "Webhook" : "SDK"}</td>
            <td>
              <code>{s.id}</code>
            </td>
            <td>{formatTime(s.createTime)}</td>
            <td class="actions">
              <a href={`/console/plans/${s.id}`} aria-label={`Tracking plan of ${s.name}`}>
                Tracking plan
              </a>
              {s.kind !== SourceKind.WEBHOOK && may("SourceService/RotateWriteKey") && (
                <button type="button" aria-label={`Rotate key of ${s.name}`} onClick={() => rotate(s.id, s.name)}>
                  Rotate key
                </button>
              )}
              {may("SourceService/DeleteSource") && (
                <button type="button" class="danger" aria-label={`Delete ${s.name}`} onClick={() => remove(s.id, s.name)}>
                  Delete
                </button>
              )}
            </td>
          </tr>
        )}
      />
    </section>
  );
}
