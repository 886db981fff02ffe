import type { VendorRequest } from "../../../../gen/waypost/v1/destination_pb.js";
import { HeadersTable } from "../components.js";

/** A body as people read it: indented when it is JSON, as sent otherwise. */
function readable(body: string): string {
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}

/**
 * The requests an integration's subscriptions would send for one call
 * (Test against recent calls): each with its subscription, method, URL,
 * headers and body, secrets masked by the server. Nothing was sent.
 */
export function VendorRequests(props: { messageId: string; requests: VendorRequest[] }) {
  return (
    <ol class="vendor-requests" aria-label={`Requests for ${props.messageId}`}>
      {props.requests.map((request, i) => (
        <li key={i} class="vendor-request">
          <p>
            <span class="subscription-name">{request.subscription}</span>:{" "}
            <code>
              {request.method} {request.url}
            </code>
          </p>
          {Object.keys(request.headers).length > 0 && (
            <HeadersTable label={`Headers of request ${i + 1} for ${props.messageId}`} headers={request.headers} />
          )}
          {request.body !== "" && <pre class="body">{readable(request.body)}</pre>}
        </li>
      ))}
    </ol>
  );
}
