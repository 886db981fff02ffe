import { useState } from "preact/hooks";
import type { TestedHookRequest } from "../../../../gen/waypost/v1/hook_pb.js";
import { EmptyRow, ErrorMessage, HeaderRow } from "../components.js";
import { useAction } from "../context.js";
import { prettyBody } from "../body-view.js";

/**
 * Test against recent requests: the transform as typed (not the stored one)
 * over the source's latest stored requests, on the server; nothing is stored.
 * Results belong to the transform they came from: the parent clears them by
 * changing `transform`.
 */
export function HookTransformTest(props: { sourceId: string; transform: string }) {
  const action = useAction();
  const [tested, setTested] = useState<{ transform: string; requests: TestedHookRequest[] } | undefined>();
  const current = tested && tested.transform === props.transform ? tested.requests : undefined;

  async function test() {
    const transform = props.transform;
    const response = await action.run((api) =>
      api.hooks.testSourceTransform({ source: { id: props.sourceId, webhook: { transform } }, sampleSize: 20 }),
    );
    if (response) setTested({ transform, requests: response.requests });
  }

  return (
    <section aria-label="Test against recent requests">
      <div class="form-actions">
        <button type="button" onClick={test} disabled={action.busy}>
          Test against recent requests
        </button>
      </div>
      <ErrorMessage error={action.error} />
      {current && (
        <table aria-label="Transform test results">
          <HeaderRow columns={["Request", "Calls or error"]} />
          <tbody>
            {current.length === 0 && <EmptyRow columns={2}>No stored requests yet: send one to the inbound URL first.</EmptyRow>}
            {current.map((r) => (
              <tr key={r.requestId}>
                <td>{r.requestId}</td>
                <td>
                  {r.error ? (
                    <p class="error">{r.error}</p>
                  ) : r.calls.length === 0 ? (
                    "No calls."
                  ) : (
                    r.calls.map((c) => (
                      <details key={c.messageId} open>
                        <summary>
                          {c.type} <code>{c.messageId}</code>
                        </summary>
                        <pre class="body">{prettyBody(c.json)}</pre>
                      </details>
                    ))
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
