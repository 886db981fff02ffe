import { useState } from "preact/hooks";
import { SourceKind } from "../../../../gen/waypost/v1/source_pb.js";
import { EmptyRow, ErrorMessage, HeaderRow, SecretOnce } from "../components.js";
import { useAction, useLoad, useSession } from "../context.js";
import { describeError, fieldError, isUnauthenticated } from "../errors.js";
import type { FieldErrors } from "../field-error.js";
import { formatTime } from "../format.js";
import { checkHookDraft, hookDraftOf, inboundUrlOf, webhookOf, type HookDraft } from "../hook-draft.js";
import { listAll } from "../paging.js";
import { HookSettingsFields } from "./hook-settings-fields.js";

/**
 * Sources: list, create (an SDK source's write key, or a webhook source's
 * inbound URL, shown once), rotate a key, delete. A source's own page
 * (its name) has a webhook source's settings and requests.
 */
export function SourcesView() {
  const sources = useLoad(
    (api) =>
      listAll(
        (pageToken) => api.sources.listSources({ pageToken, pageSize: 100 }),
        (r) => r.sources,
      ),
    [],
  );
  const { api, signOut } = useSession();
  const action = useAction();
  const [name, setName] = useState("");
  const [kind, setKind] = useState<SourceKind>(SourceKind.SDK);
  const [hook, setHook] = useState<HookDraft>(() => hookDraftOf(undefined));
  const [errors, setErrors] = useState<FieldErrors>({});
  const [createError, setCreateError] = useState<string | undefined>();
  const [creating, setCreating] = useState(false);
  const [shownKey, setShownKey] = useState<{ label: string; value: string } | undefined>();

  async function create(event: Event) {
    event.preventDefault();
    setErrors({});
    setCreateError(undefined);
    const webhook = kind === SourceKind.WEBHOOK;
    if (webhook) {
      const problems = checkHookDraft(hook);
      if (Object.keys(problems).length > 0) {
        setErrors(problems);
        return;
      }
    }
    setCreating(true);
    try {
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
    } catch (caught) {
      if (isUnauthenticated(caught)) signOut(describeError(caught));
      const named = fieldError(caught, "source");
      if (named && named.field !== "source") setErrors({ [named.field]: named.message });
      else setCreateError(describeError(caught));
    } finally {
      setCreating(false);
    }
  }
  async function rotate(id: string, sourceName: string) {
    if (!confirm(`Rotate the write key of ${sourceName}? The current key stops working at once.`)) return;
    const response = await action.run((a) => a.sources.rotateWriteKey({ id }));
    if (response?.source) setShownKey({ label: `New write key of ${sourceName}.`, value: response.source.writeKey });
  }
  async function remove(id: string, sourceName: string) {
    if (!confirm(`Delete the source ${sourceName}? Its write key stops working.`)) return;
    await action.run((a) => a.sources.deleteSource({ id }));
    sources.reload();
  }

  return (
    <section>
      <h1>Sources</h1>
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
      <ErrorMessage error={createError ?? errors.name ?? action.error ?? sources.error} />
      {shownKey && <SecretOnce label={shownKey.label} value={shownKey.value} onDismiss={() => setShownKey(undefined)} />}
      <table aria-label="Sources">
        <HeaderRow columns={["Name", "Kind", "ID", "Created", "Actions"]} />
        <tbody>
          {sources.data?.length === 0 && <EmptyRow columns={5}>No sources yet.</EmptyRow>}
          {sources.data?.map((s) => (
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
                {s.kind !== SourceKind.WEBHOOK && (
                  <button type="button" aria-label={`Rotate key of ${s.name}`} onClick={() => rotate(s.id, s.name)}>
                    Rotate key
                  </button>
                )}
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
