import { useState } from "preact/hooks";
import { createApi } from "../api.js";
import { describeError, isUnauthenticated } from "../errors.js";

/**
 * Asks for the admin token and checks it with a cheap admin RPC (one source)
 * before keeping it, so a wrong token is refused here rather than later.
 */
export function SignInView(props: { notice: string | undefined; onSignedIn(token: string): void }) {
  const [token, setToken] = useState("");
  const [error, setError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);
  async function submit(event: Event) {
    event.preventDefault();
    const candidate = token.trim();
    if (candidate === "") {
      setError("Enter the admin token.");
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      await createApi(candidate).sources.listSources({ pageSize: 1 });
      props.onSignedIn(candidate);
    } catch (caught) {
      setError(isUnauthenticated(caught) ? "The admin token was refused." : describeError(caught));
    } finally {
      setBusy(false);
    }
  }
  return (
    <main class="sign-in">
      <h1>Waypost console</h1>
      <form onSubmit={submit} autocomplete="off">
        <label for="admin-token">Admin token</label>
        <input
          id="admin-token"
          type="password"
          value={token}
          onInput={(e) => setToken(e.currentTarget.value)}
          aria-invalid={error ? "true" : undefined}
          aria-describedby={error ? "sign-in-error" : undefined}
        />
        <button type="submit" disabled={busy}>
          Sign in
        </button>
        {(error ?? props.notice) && (
          <p id="sign-in-error" role="alert" class="error">
            {error ?? props.notice}
          </p>
        )}
        <p class="hint">
          The token is <code>WAYPOST_ADMIN_TOKEN</code>, or the file the server named in its log when it created one. It is kept for this
          tab only.
        </p>
      </form>
    </main>
  );
}
