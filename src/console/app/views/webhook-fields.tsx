import { FieldError, type FieldErrors } from "../field-error.js";
import { LabelledField } from "./labelled-field.js";
import { type BatchDraft, WebhookBatchFields } from "./webhook-batch-fields.js";

export interface HeaderDraft {
  name: string;
  value: string;
}

/** One webhook as the form edits it. */
export interface WebhookDraft {
  url: string;
  headers: HeaderDraft[];
  /** Undefined: one call per POST. */
  batch?: BatchDraft | undefined;
}

const maxWebhooks = 5;
const maxHeaders = 5;

/** The webhooks of a destination (1 to 5), each with up to 5 static headers. */
export function WebhookFields(props: { webhooks: WebhookDraft[]; errors: FieldErrors; onChange(webhooks: WebhookDraft[]): void }) {
  const { webhooks, errors, onChange } = props;
  const set = (index: number, change: Partial<WebhookDraft>) => onChange(webhooks.map((w, i) => (i === index ? { ...w, ...change } : w)));
  return (
    <fieldset>
      <legend>Webhooks</legend>
      <FieldError errors={errors} field="webhooks" />
      {webhooks.map((webhook, i) => {
        const n = i + 1;
        const urlField = `webhooks[${i}].url`;
        return (
          <div class="webhook" key={i}>
            <LabelledField id={`webhook-${i}-url`} label={`Webhook ${n} URL`} field={urlField} errors={errors}>
              {(input) => (
                <input
                  type="url"
                  value={webhook.url}
                  placeholder="https://example.com/hooks/waypost"
                  onInput={(e) => set(i, { url: e.currentTarget.value })}
                  {...input}
                />
              )}
            </LabelledField>
            {webhook.headers.map((header, h) => (
              <div class="header-row" key={h}>
                <label for={`webhook-${i}-header-${h}-name`}>{`Webhook ${n} header ${h + 1} name`}</label>
                <input
                  id={`webhook-${i}-header-${h}-name`}
                  value={header.name}
                  onInput={(e) => set(i, { headers: webhook.headers.map((x, j) => (j === h ? { ...x, name: e.currentTarget.value } : x)) })}
                />
                <label for={`webhook-${i}-header-${h}-value`}>{`Webhook ${n} header ${h + 1} value`}</label>
                <input
                  id={`webhook-${i}-header-${h}-value`}
                  value={header.value}
                  onInput={(e) =>
                    set(i, { headers: webhook.headers.map((x, j) => (j === h ? { ...x, value: e.currentTarget.value } : x)) })
                  }
                />
                <button type="button" class="quiet" onClick={() => set(i, { headers: webhook.headers.filter((_, j) => j !== h) })}>
                  {`Remove header ${h + 1} of webhook ${n}`}
                </button>
              </div>
            ))}
            <FieldError errors={errors} field={`webhooks[${i}].headers`} prefix />
            <WebhookBatchFields index={i} batch={webhook.batch} errors={errors} onChange={(batch) => set(i, { batch })} />
            <div class="row-actions">
              <button
                type="button"
                disabled={webhook.headers.length >= maxHeaders}
                onClick={() => set(i, { headers: [...webhook.headers, { name: "", value: "" }] })}
              >
                {`Add header to webhook ${n}`}
              </button>
              {webhooks.length > 1 && (
                <button type="button" class="quiet" onClick={() => onChange(webhooks.filter((_, j) => j !== i))}>
                  {`Remove webhook ${n}`}
                </button>
              )}
            </div>
          </div>
        );
      })}
      <button type="button" disabled={webhooks.length >= maxWebhooks} onClick={() => onChange([...webhooks, { url: "", headers: [] }])}>
        Add webhook
      </button>
    </fieldset>
  );
}
