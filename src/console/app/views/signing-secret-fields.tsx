import { useState } from "preact/hooks";
import type { Destination } from "../../../../gen/waypost/v1/destination_pb.js";
import { ErrorMessage, SecretOnce } from "../components.js";
import { useMay, useSession } from "../context.js";
import { describeError, isUnauthenticated } from "../errors.js";

/**
 * Standard Webhooks signing. On create: whether the server generates a
 * secret (the form shows it once, after saving). On edit: whether one is
 * set, and Rotate, which shows the new secret once; the previous ones keep
 * signing for an overlap so receivers can switch without failures.
 * Rotating changes the destination's etag: `onRotated` hands the form the
 * new one, so saving afterwards is not taken for a concurrent edit.
 */
export function SigningSecretFields(props: {
  destination: Destination | undefined;
  generate: boolean;
  onGenerateChange(generate: boolean): void;
  onRotated(destination: Destination): void;
}) {
  const { api, signOut } = useSession();
  const may = useMay();
  const [hasSecret, setHasSecret] = useState(props.destination?.hasSigningSecret === true);
  const [shown, setShown] = useState<string | undefined>();
  const [error, setError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);
  const destination = props.destination;

  async function rotate() {
    if (!destination) return;
    setBusy(true);
    setError(undefined);
    try {
      const response = await api.destinations.rotateSigningSecret({ id: destination.id });
      setShown(response.signingSecret);
      setHasSecret(response.destination?.hasSigningSecret ?? true);
      if (response.destination) props.onRotated(response.destination);
    } catch (caught) {
      if (isUnauthenticated(caught)) signOut(describeError(caught));
      setError(describeError(caught));
    } finally {
      setBusy(false);
    }
  }

  return (
    <fieldset>
      <legend>Signing secret</legend>
      <p class="hint">
        Signs every request the Standard Webhooks way (webhook-id, webhook-timestamp, webhook-signature headers). The server shows a secret
        only once.
      </p>
      {!destination ? (
        <label class="check">
          <input type="checkbox" checked={props.generate} onChange={(e) => props.onGenerateChange(e.currentTarget.checked)} /> Generate
          signing secret
        </label>
      ) : (
        <>
          <p>{hasSecret ? "Signing secret: set" : "Signing secret: none"}</p>
          <ErrorMessage error={error} />
          {shown !== undefined && (
            <SecretOnce label={`New signing secret of ${destination.name}.`} value={shown} onDismiss={() => setShown(undefined)} />
          )}
          {/* Without a secret there is nothing to rotate: the same call generates the first one. */}
          {may("DestinationService/RotateSigningSecret") && (
            <button type="button" disabled={busy} onClick={rotate}>
              {hasSecret ? "Rotate signing secret" : "Generate signing secret"}
            </button>
          )}
          <p class="hint">
            {hasSecret
              ? "A new secret signs from now on; the previous ones keep signing for an overlap (24 hours by default)."
              : "Requests are signed from now on; receivers need the secret to verify them."}
          </p>
        </>
      )}
    </fieldset>
  );
}
