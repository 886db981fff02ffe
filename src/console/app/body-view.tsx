import { useState } from "preact/hooks";

/**
 * JSON indented for reading; anything else as it is. The body is always
 * what was sent byte for byte, so Copy copies the original, not the
 * indented text (a signature covers exactly those bytes).
 */
export function prettyBody(body: string): string {
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}

/**
 * A delivery's body, indented, with a button that copies the exact bytes
 * sent. `stored`: the body is the stored call, not what was sent (the
 * destination builds requests of its own: they are under each attempt).
 */
export function BodyView(props: { body: string; stored?: boolean }) {
  const [copied, setCopied] = useState(false);
  if (props.stored) {
    return (
      <>
        <h2 id="body-heading">Call</h2>
        <p class="hint">The call as stored, indented for reading. The requests sent, built from it, are under Requests sent.</p>
        {/* biome-ignore lint/a11y/useAriaPropsSupportedByRole: found by its heading, as the body is */}
        <pre class="body" aria-labelledby="body-heading">
          {prettyBody(props.body)}
        </pre>
      </>
    );
  }
  return (
    <>
      <h2 id="body-heading">Body</h2>
      <p class="hint">
        Indented for reading.{" "}
        <button
          type="button"
          class="quiet"
          onClick={() => {
            void navigator.clipboard?.writeText(props.body).then(() => setCopied(true));
          }}
        >
          {copied ? "Copied" : "Copy body"}
        </button>{" "}
        copies the exact bytes sent.
      </p>
      {/* biome-ignore lint/a11y/useAriaPropsSupportedByRole: screen readers and the tests find the body by its heading; a region role would add a landmark per delivery */}
      <pre class="body" aria-labelledby="body-heading">
        {prettyBody(props.body)}
      </pre>
    </>
  );
}
