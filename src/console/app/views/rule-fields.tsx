import { useEffect, useState } from "preact/hooks";
import { TestOutcome, type TestedCall } from "../../../../gen/waypost/v1/destination_pb.js";
import { EmptyRow, ErrorMessage, HeaderRow } from "../components.js";
import { useMay, useSession } from "../context.js";
import { type DestinationDraft, rulesOf } from "../destination-draft.js";
import { describeError } from "../errors.js";
import type { FieldErrors } from "../field-error.js";
import { parseJsonObject } from "../json-text.js";
import { ownKind } from "../kinds/registry.js";
import { type SettingField, SettingInputs } from "./settings-fieldset.js";
import { VendorRequests } from "./vendor-requests.js";
import { enumWords } from "../../../enum-words.js";

const outcomeNames = enumWords(
  TestOutcome,
  { [TestOutcome.UNSPECIFIED]: "–", [TestOutcome.NOT_SUBSCRIBED]: "No subscription matched" },
  true,
);

/** What an outcome that carries no error or body means, in the results' last column. */
const outcomeTexts: Partial<Record<TestOutcome, string>> = {
  [TestOutcome.FILTERED]: "The filter does not match this call: no delivery.",
  [TestOutcome.DROPPED_BY_TRANSFORM]: "The transform returned null: no delivery.",
  [TestOutcome.NOT_SUBSCRIBED]: "No enabled subscription matches this call: no delivery.",
  [TestOutcome.NO_CONSENT]: "The call's consent preferences hold it back from this destination: no delivery.",
};

// The server names the part of a rule that is wrong (filter.properties.total.$gt): it is the field's error.
const ruleFields: ReadonlyArray<SettingField<DestinationDraft>> = [
  {
    key: "filter",
    field: "filter",
    label: "Filter",
    input: "code",
    parts: true,
    hint: 'JSON matched against each call, e.g. {"type": "track", "properties.total": {"$gt": 100}}. Empty: every call.',
  },
  {
    key: "consentCategories",
    field: "consentCategories",
    label: "Consent categories",
    input: "lines",
    parts: true,
    hint: "Separated by commas or lines (Advertising, Analytics): a call whose context.consent.categoryPreferences is an object gets here only when every one is true there. Empty: no categories.",
  },
  {
    key: "requireConsent",
    field: "requireConsent",
    label: "Require consent",
    input: "check",
    hint: "Hold back calls that carry no consent preferences too.",
  },
  {
    key: "addProfileId",
    field: "addProfileId",
    label: "Add profile id",
    input: "check",
    hint: "Every call it sends carries context.profileId: the person (identity resolution) its userId or anonymousId belongs to.",
  },
  {
    key: "dropFields",
    field: "dropFields",
    label: "Dropped fields",
    input: "code",
    rows: 3,
    parts: true,
    hint: "One dotted path a line (context.ip, properties.email): removed before sending.",
  },
  {
    key: "transform",
    field: "transform",
    label: "Transform",
    input: "code",
    rows: 8,
    hint: "JavaScript defining function transform(event): return the object to send, or null to drop the call.",
  },
];

/**
 * A destination's routing rules (docs/routing.md): the filter, the consent
 * categories, the dropped fields and the transform, with Test against recent calls, which runs the
 * draft over the last calls of its sources on the server and sends nothing.
 */
export function RuleFields(props: {
  draft: DestinationDraft;
  errors: FieldErrors;
  onChange(change: Partial<DestinationDraft>): void;
  /** The test's results (undefined: none), shown by the form below itself, full width. */
  tested: TestedCall[] | undefined;
  onTested(calls: TestedCall[] | undefined): void;
}) {
  const { draft, errors, onChange, tested, onTested: setTested } = props;
  const { api } = useSession();
  const may = useMay();
  const [testError, setTestError] = useState<string | undefined>();
  const [testing, setTesting] = useState(false);
  const kind = ownKind(draft.kind, draft.kinds);
  // Results and errors of an earlier draft would read as this one's: the rules, and what the kind's test sends.
  const rulesKey = JSON.stringify([
    draft.filter,
    draft.dropFields,
    draft.transform,
    draft.consentCategories,
    draft.requireConsent,
    draft.sourceIds,
    draft.kind,
    kind.form.tested?.(kind.part),
  ]);
  useEffect(() => setTestError(undefined), [rulesKey]);
  async function test() {
    setTestError(undefined);
    const filter = parseJsonObject(draft.filter);
    if (filter.problem !== undefined) {
      setTestError(`Filter ${filter.problem}`);
      return;
    }
    const problems = Object.entries(kind.form.check?.(kind.part) ?? {});
    if (problems.length > 0) {
      setTestError(problems.map(([field, problem]) => `${field}: ${problem}`).join("; "));
      return;
    }
    setTesting(true);
    try {
      // The draft as it stands, over its own sources: nothing stored is used in its place.
      const response = await api.destinations.testDestination({
        destination: { sourceIds: draft.sourceIds, ...rulesOf(draft), ...kind.form.tested?.(kind.part) },
        sampleSize: 20,
      });
      setTested(response.calls);
    } catch (caught) {
      setTested(undefined);
      setTestError(describeError(caught));
    } finally {
      setTesting(false);
    }
  }

  return (
    <fieldset>
      <legend>Routing rules</legend>
      <SettingInputs fields={ruleFields} draft={draft} errors={errors} onChange={onChange} />
      {may("DestinationService/TestDestination") && (
        <div class="form-actions">
          <button type="button" onClick={test} disabled={testing}>
            Test against recent calls
          </button>
        </div>
      )}
      <ErrorMessage error={testError} />
      {tested && (
        <p class="hint" role="status">
          Tested {tested.length} {tested.length === 1 ? "call" : "calls"}: the results are below the form.
        </p>
      )}
    </fieldset>
  );
}

/** The results of Test against recent calls, as wide as the page: bodies need the room. */
export function TestResults(props: { calls: TestedCall[] }) {
  return (
    <section class="test-results" aria-label="Test against recent calls">
      <h2>Test results</h2>
      <table aria-label="Test results">
        <HeaderRow columns={["Message ID", "Type", "Event", "Outcome", "Body or error"]} />
        <tbody>
          {props.calls.length === 0 && <EmptyRow columns={5}>No stored calls from these sources yet.</EmptyRow>}
          {props.calls.map((call) => (
            <tr key={`${call.sourceId}:${call.messageId}`}>
              <td>{call.messageId}</td>
              <td>{call.type}</td>
              <td>{call.event || "–"}</td>
              <td>{outcomeNames[call.outcome]}</td>
              <td>
                {call.requests.length > 0 ? (
                  <VendorRequests messageId={call.messageId} requests={call.requests} />
                ) : (
                  <pre class="body">{call.error || call.body || outcomeTexts[call.outcome] || "–"}</pre>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
