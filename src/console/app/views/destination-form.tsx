import { useState } from "preact/hooks";
import type { Destination, TestedCall } from "../../../../gen/waypost/v1/destination_pb.js";
import type { Source } from "../../../../gen/waypost/v1/source_pb.js";
import { ErrorMessage, SecretOnce } from "../components.js";
import { useMay, useSession } from "../context.js";
import { type DestinationDraft, draftOf, parseRateLimit, toRequest } from "../destination-draft.js";
import { FieldError, type FieldErrors } from "../field-error.js";
import { useFormSubmit } from "../form-submit.js";
import { sharedNames, sourceTell } from "../twins.js";
import { FlowControlFields } from "./flow-control-fields.js";
import { RuleFields, TestResults } from "./rule-fields.js";
import { changeKind, type KindDrafts, ownKind } from "../kinds/registry.js";
import { parseJsonObject } from "../json-text.js";
import { descriptorNamed, type KindName, kindDescriptors } from "../../../delivery/kinds/descriptors.js";
import { TwinHint } from "../names.js";

/** The draft's parts a test's results depend on: changing one clears them. */
const testedKeys: ReadonlyArray<keyof DestinationDraft> = [
  "filter",
  "dropFields",
  "transform",
  "consentCategories",
  "requireConsent",
  "sourceIds",
  "kind",
];

/**
 * Creates or edits a destination. An invalid_argument from the server names
 * a field (`destination.webhooks[0].url: ...`): the message is shown next to
 * that field, and anything else above the form.
 */
export function DestinationForm(props: { sources: Source[]; destination: Destination | undefined; onSaved(): void }) {
  const { api } = useSession();
  const creating = !props.destination;
  const may = useMay();
  const savable = may(creating ? "DestinationService/CreateDestination" : "DestinationService/UpdateDestination");
  const [draft, setDraft] = useState<DestinationDraft>(() => draftOf(props.destination));
  const { errors, formError, busy, submit: send } = useFormSubmit("destination");
  // Rotating the signing secret changes the etag this form must send.
  const [etag, setEtag] = useState(props.destination?.etag ?? "");
  // A generated signing secret, shown once after creating.
  const [generated, setGenerated] = useState<{ name: string; secret: string } | undefined>();
  // Test against recent calls: its results belong to the draft they were made from.
  const [tested, setTested] = useState<TestedCall[] | undefined>();
  const update = (change: Partial<DestinationDraft>) => {
    setDraft((d) => ({ ...d, ...change }));
    if (testedKeys.some((key) => key in change)) setTested(undefined);
  };
  const own = ownKind(draft.kind, draft.kinds);
  /** A change to the kind's own part; a kind whose test sends its settings makes the results stale. */
  const updateKind = (change: Partial<KindDrafts[KindName]>) => {
    setDraft((d) => ({ ...d, kinds: changeKind(d.kinds, d.kind, change) }));
    if (own.form.tested) setTested(undefined);
  };

  /** What the page refuses before sending: the first of a rate limit that is no number, a filter that is no JSON object, the kind's own. */
  function problems(): FieldErrors {
    const rate = parseRateLimit(draft.rateLimit);
    if (typeof rate !== "number") return { maxRequestsPerSecond: rate.problem };
    const filter = parseJsonObject(draft.filter);
    if (filter.problem !== undefined) return { filter: filter.problem };
    return own.form.check?.(own.part) ?? {};
  }

  async function submit(event: Event) {
    event.preventDefault();
    await send(problems(), async () => {
      const { destination, paths } = toRequest(draft);
      if (props.destination) {
        destination.id = props.destination.id;
        destination.etag = etag;
        await api.destinations.updateDestination({ destination, updateMask: { paths } });
      } else {
        const response = await api.destinations.createDestination({ destination, ...own.form.create?.(own.part) });
        if (response.signingSecret) {
          setGenerated({ name: response.destination?.name ?? draft.name, secret: response.signingSecret });
          return;
        }
      }
      props.onSaved();
    });
  }

  const sharedSources = sharedNames(props.sources);
  const toggleSource = (id: string, on: boolean) =>
    update({ sourceIds: on ? [...draft.sourceIds, id] : draft.sourceIds.filter((s) => s !== id) });

  if (generated) {
    return (
      <div>
        <p>{`Destination ${generated.name} created.`}</p>
        <SecretOnce label={`Signing secret of ${generated.name}.`} value={generated.secret} onDismiss={props.onSaved} />
      </div>
    );
  }

  return (
    <>
      {form()}
      {tested && <TestResults calls={tested} />}
    </>
  );

  /** The form itself (JSX, not a component: no remount per render). */
  function form() {
    return (
      <form class="stacked" onSubmit={submit} noValidate>
        <ErrorMessage error={formError} />
        <div class="field">
          <label for="destination-name">Name</label>
          <input
            id="destination-name"
            value={draft.name}
            onInput={(e) => update({ name: e.currentTarget.value })}
            aria-invalid={errors.name ? "true" : undefined}
            aria-describedby={errors.name ? "error-name" : undefined}
          />
          <FieldError errors={errors} field="name" />
        </div>
        <div class="field">
          <label for="destination-kind">Kind</label>
          <select
            id="destination-kind"
            value={draft.kind}
            disabled={!creating}
            onChange={(e) => update({ kind: descriptorNamed(e.currentTarget.value)?.name ?? draft.kind })}
          >
            {kindDescriptors.map((kind) => (
              <option key={kind.name} value={kind.name}>
                {kind.title}
              </option>
            ))}
          </select>
          <FieldError errors={errors} field="kind" />
        </div>
        <div class="field">
          <label>
            <input type="checkbox" checked={draft.enabled} onChange={(e) => update({ enabled: e.currentTarget.checked })} /> Enabled
          </label>
        </div>
        <fieldset aria-describedby="error-sourceIds">
          <legend>Sources</legend>
          {props.sources.length === 0 && <p>No sources yet: create one on the Sources page.</p>}
          {props.sources.map((s) => (
            <label key={s.id} class="check">
              <input
                type="checkbox"
                checked={draft.sourceIds.includes(s.id)}
                onChange={(e) => toggleSource(s.id, e.currentTarget.checked)}
              />{" "}
              {s.name}
              {sharedSources.has(s.name) && <TwinHint text={sourceTell(s)} />}
            </label>
          ))}
          <FieldError errors={errors} field="sourceIds" prefix />
        </fieldset>
        {kindFields()}
        <FlowControlFields draft={draft} errors={errors} onChange={update} />
        <RuleFields draft={draft} errors={errors} onChange={update} tested={tested} onTested={setTested} />
        {savable ? (
          <div class="form-actions">
            <button type="submit" disabled={busy}>
              {creating ? "Create destination" : "Save destination"}
            </button>
          </div>
        ) : (
          <p class="hint">Read only: your role cannot change destinations.</p>
        )}
      </form>
    );
  }

  /** The fields of the draft's kind (JSX, not a component: no remount per render). */
  function kindFields() {
    const KindFields = own.form.Fields;
    return (
      <KindFields
        draft={own.part}
        errors={errors}
        onChange={updateKind}
        destination={props.destination}
        onRotated={(rotated) => setEtag(rotated.etag)}
      />
    );
  }
}
