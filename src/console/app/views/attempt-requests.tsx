import { useState } from "preact/hooks";
import type { DeliveryAttempt } from "../../../../gen/waypost/v1/delivery_pb.js";
import { prettyBody } from "../body-view.js";
import { HeadersTable } from "../components.js";
import { formatTime } from "../format.js";

/**
 * The requests a delivery's attempts sent, as each attempt kept them (a
 * destination that builds requests of its own from the call: an
 * integration's actions): method, URL, headers and body, secrets masked by
 * the server. Copy copies the body's exact bytes as sent.
 */
export function AttemptRequests(props: { attempts: readonly DeliveryAttempt[] }) {
  const sent = props.attempts.filter((a) => a.method !== "");
  return (
    <>
      <h2>Requests sent</h2>
      {sent.length === 0 ? (
        <p class="hint">No request sent yet.</p>
      ) : (
        <ol class="vendor-requests" aria-label="Requests sent">
          {sent.map((a, i) => (
            <SentRequest key={`${a.attempt}-${i}`} attempt={a} n={i + 1} />
          ))}
        </ol>
      )}
    </>
  );
}

function SentRequest(props: { attempt: DeliveryAttempt; n: number }) {
  const a = props.attempt;
  const [copied, setCopied] = useState(false);
  const kept = new TextEncoder().encode(a.requestBody).length;
  const cut = a.requestBodyBytes > kept;
  return (
    <li class="vendor-request">
      <p>
        Attempt {a.attempt}, {formatTime(a.attemptTime)}
        {a.subscription && (
          <>
            , <span class="subscription-name">{a.subscription}</span>
          </>
        )}
        :{" "}
        <code>
          {a.method} {a.url}
        </code>
      </p>
      {a.batchId && <BatchNote attempt={a} />}
      {Object.keys(a.requestHeaders).length > 0 && <HeadersTable label={`Headers of request ${props.n}`} headers={a.requestHeaders} />}
      {a.requestBody !== "" && (
        <>
          <p class="hint">
            {cut ? `The first ${kept} of ${a.requestBodyBytes} bytes sent. ` : ""}
            <button
              type="button"
              class="quiet"
              onClick={() => {
                void navigator.clipboard?.writeText(a.requestBody).then(() => setCopied(true));
              }}
            >
              {copied ? "Copied" : `Copy body of request ${props.n}`}
            </button>{" "}
            copies the exact bytes sent{cut ? " (as far as they were kept)" : ""}.
          </p>
          {/* biome-ignore lint/a11y/useAriaPropsSupportedByRole: screen readers and the tests find each body by its name; a region role would add a landmark per request */}
          <pre class="body" aria-label={`Body of request ${props.n}`}>
            {prettyBody(a.requestBody)}
          </pre>
        </>
      )}
    </li>
  );
}

/** Which batch operation a request was, and how many other calls it carried. */
export function BatchNote(props: { attempt: DeliveryAttempt }) {
  const others = props.attempt.batchCalls - 1;
  return (
    <p class="hint batch-note">
      Sent in batch <code>{props.attempt.batchId}</code>, one request for {props.attempt.batchCalls}{" "}
      {props.attempt.batchCalls === 1 ? "call" : "calls"}
      {others > 0 ? `: this one and ${others} ${others === 1 ? "other" : "others"}` : ""}.
      <BatchDeliveries attempt={props.attempt} />
    </p>
  );
}

/** Links to the deliveries of the other calls a batch operation carried (those the server lists). */
export function BatchDeliveries(props: { attempt: DeliveryAttempt }) {
  const ids = props.attempt.batchDeliveryIds;
  if (ids.length === 0) return null;
  const more = props.attempt.batchCalls - 1 - ids.length;
  return (
    <span class="batch-deliveries">
      {" "}
      Went with{" "}
      {ids.map((id, i) => (
        <span key={id}>
          {i > 0 && ", "}
          <a href={`/console/deliveries/${id}`} aria-label={`Delivery ${id}, in the same batch`}>
            {id}
          </a>
        </span>
      ))}
      {more > 0 ? ` and ${more} more` : ""}.
    </span>
  );
}
