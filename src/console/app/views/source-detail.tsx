import { useState } from "preact/hooks";
import { SourceKind, type Source } from "../../../../gen/waypost/v1/source_pb.js";
import { ErrorMessage, SecretOnce } from "../components.js";
import { useAction, useLoad, useMay, useSession } from "../context.js";
import { useFormSubmit } from "../form-submit.js";
import { formatTime } from "../format.js";
import { checkHookDraft, hookDraftOf, inboundUrlOf, verifierLabel, webhookOf, type HookDraft } from "../hook-draft.js";
import { HookRequests } from "./hook-requests.js";
import { HookSettingsFields } from "./hook-settings-fields.js";
import { HookTransformTest } from "./hook-transform-test.js";

/**
 * /console/sources/ID: a source; for a webhook source its settings (saved
 * with UpdateSource), Rotate URL token (the new inbound URL shown once), the
 * transform with Test against recent requests, and the requests received.
 */
export function SourceDetailView(props: { params: { id: string } }) {
  const id = props.params.id;
  const loaded = useLoad(async (api) => (await api.sources.getSource({ id })).source, [id]);
  const source = loaded.data;
  return (
    <section>
      <h1>{`Source ${source?.name ?? ""}`}</h1>
      <p>
        <a href="/console/sources">All sources</a>
      </p>
      <ErrorMessage error={loaded.error} />
      {source && (
        <dl class="facts">
          <dt>ID</dt>
          <dd>
            <code>{source.id}</code>
          </dd>
          <dt>Kind</dt>
          <dd>{source.kind === SourceKind.WEBHOOK ? "Webhook" : "SDK"}</dd>
          <dt>Created</dt>
          <dd>{formatTime(source.createTime)}</dd>
          {source.kind === SourceKind.WEBHOOK && (
            <>
              <dt>Verifier</dt>
              <dd>{verifierLabel(source.webhook?.verifier ?? 0)}</dd>
            </>
          )}
        </dl>
      )}
      {source?.kind === SourceKind.WEBHOOK && <WebhookSourcePanel key={source.id} source={source} onSaved={loaded.reload} />}
    </section>
  );
}

function WebhookSourcePanel(props: { source: Source; onSaved(): void }) {
  const { api } = useSession();
  const may = useMay();
  const rotation = useAction();
  const [draft, setDraft] = useState<HookDraft>(() => hookDraftOf(props.source.webhook));
  // Only the webhook's own fields are this form's: anything else about the source goes above it.
  const { errors, formError, busy, submit } = useFormSubmit("source", (field) => field.startsWith("webhook."));
  const [saved, setSaved] = useState(false);
  const [shownUrl, setShownUrl] = useState<string | undefined>();
  const update = (change: Partial<HookDraft>) => {
    setDraft((d) => ({ ...d, ...change }));
    setSaved(false);
  };

  async function save(event: Event) {
    event.preventDefault();
    await submit(checkHookDraft(draft), async () => {
      const response = await api.sources.updateSource({
        source: { id: props.source.id, webhook: webhookOf(draft) },
        updateMask: { paths: ["webhook"] },
      });
      setDraft(hookDraftOf(response.source?.webhook));
      setSaved(true);
      props.onSaved();
    });
  }

  async function rotate() {
    const question = `Rotate the inbound URL of ${props.source.name}? The current URL stops working at once.`;
    const response = await rotation.confirmRun(question, (a) => a.sources.rotateHookToken({ id: props.source.id }));
    if (response?.source?.hookToken) setShownUrl(inboundUrlOf(response.source.hookToken));
  }

  return (
    <>
      <h2>Inbound URL</h2>
      <p class="hint">
        Senders POST to {location.origin}/hooks/&lt;token&gt;. The token was shown once when the source was created; rotate it for a new URL
        (the current one stops working at once).
      </p>
      {may("SourceService/RotateHookToken") && (
        <div class="form-actions">
          <button type="button" onClick={rotate} disabled={rotation.busy}>
            Rotate URL token
          </button>
        </div>
      )}
      <ErrorMessage error={rotation.error} />
      {shownUrl && (
        <SecretOnce label={`New inbound URL of ${props.source.name}.`} value={shownUrl} onDismiss={() => setShownUrl(undefined)} />
      )}
      <form class="stacked" onSubmit={save} noValidate>
        <ErrorMessage error={formError} />
        <HookSettingsFields draft={draft} errors={errors} existing onChange={update} />
        {may("HookService/TestSourceTransform") && <HookTransformTest sourceId={props.source.id} transform={draft.transform} />}
        {may("SourceService/UpdateSource") && (
          <div class="form-actions">
            <button type="submit" disabled={busy}>
              Save source
            </button>
          </div>
        )}
        {saved && (
          <p class="hint" role="status">
            Saved.
          </p>
        )}
      </form>
      <HookRequests sourceId={props.source.id} />
    </>
  );
}
