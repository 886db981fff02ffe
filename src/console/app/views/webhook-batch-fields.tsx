import type { WebhookBatch } from "../../../../gen/waypost/v1/destination_pb.js";
import type { FieldErrors } from "../field-error.js";
import { LabelledField } from "./labelled-field.js";

/** A webhook's batch bounds as typed ("" leaves the server's default). */
export interface BatchDraft {
  maxCalls: string;
  maxBytes: string;
  maxWaitMs: string;
}

const fields = [
  { key: "maxCalls", label: "most calls per POST (2 to 1000)" },
  { key: "maxBytes", label: "most bytes per POST (1024 to 512000; empty: 262144)" },
  { key: "maxWaitMs", label: "longest wait in ms (0 to 60000; empty: 1000)" },
] as const;

/** A webhook's batch as the form edits it (numbers as text). */
export function batchDraftOf(batch: WebhookBatch | undefined): BatchDraft | undefined {
  if (!batch) return undefined;
  return { maxCalls: String(batch.maxCalls), maxBytes: String(batch.maxBytes ?? ""), maxWaitMs: String(batch.maxWaitMs ?? "") };
}

/** What typed text sends: a whole number, or -1 (anything else: the server names the field and the range). */
const number = (text: string) => (/^\d+$/.test(text.trim()) ? Number(text.trim()) : -1);

/** A webhook's batch as a request carries it; empty optional fields leave the server's defaults. */
export function batchRequestOf(batch: BatchDraft | undefined): { maxCalls: number; maxBytes?: number; maxWaitMs?: number } | undefined {
  if (!batch) return undefined;
  return {
    maxCalls: batch.maxCalls.trim() === "" ? 0 : number(batch.maxCalls),
    ...(batch.maxBytes.trim() === "" ? {} : { maxBytes: number(batch.maxBytes) }),
    ...(batch.maxWaitMs.trim() === "" ? {} : { maxWaitMs: number(batch.maxWaitMs) }),
  };
}

/** Whether webhook `index` batches its calls ({"batch":[...]} POSTs), and the batches' bounds. */
export function WebhookBatchFields(props: {
  index: number;
  batch: BatchDraft | undefined;
  errors: FieldErrors;
  onChange(batch: BatchDraft | undefined): void;
}) {
  const { index, batch, errors, onChange } = props;
  const n = index + 1;
  const set = (key: keyof BatchDraft, value: string) => batch && onChange({ ...batch, [key]: value });
  return (
    <div class="webhook-batch">
      <label>
        <input
          type="checkbox"
          checked={batch !== undefined}
          onChange={(e) => onChange(e.currentTarget.checked ? { maxCalls: "100", maxBytes: "", maxWaitMs: "" } : undefined)}
        />
        {`Batch calls to webhook ${n}`}
      </label>
      {batch &&
        fields.map(({ key, label }) => {
          const field = `webhooks[${index}].batch.${key}`;
          return (
            <LabelledField
              key={key}
              id={`webhook-${index}-batch-${key}`}
              label={`Webhook ${n} batch: ${label}`}
              field={field}
              errors={errors}
            >
              {(input) => <input inputMode="numeric" value={batch[key]} onInput={(e) => set(key, e.currentTarget.value)} {...input} />}
            </LabelledField>
          );
        })}
    </div>
  );
}
