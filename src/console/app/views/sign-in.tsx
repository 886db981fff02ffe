import { useState } from "preact/hooks";
import { providerSignInUrl } from "../auth-session.js";
import { describeError, isUnauthenticated } from "../errors.js";

/**
 * Signing in: a token typed here (the admin token, or an API token
 * `wpt_…`), checked with GetCurrentPrincipal before it is kept, so a wrong
 * one is refused here rather than later; and, when the server has an
 * identity provider configured, the way through it.
 */
export function SignInView(props: { notice: string | undefined; oidc: boolean; onToken(token: string): Promise<void> }) {
  const [token, setToken] = useState("");
  const [error, setError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);
  async function submit(event: Event) {
    event.preventDefault();
    const candidate = token.trim();
    if (candidate === "") {
      setError("Enter the admin token or an API token.");
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      await props.onToken(candidate);
    } catch (caught) {
      setError(isUnauthenticated(caught) ? "The admin token was refused." : describeError(caught));
      setBusy(false);
    }
  }
  return (
    <main class="sign-in">
      <h1>Waypost console</h1>
      {props.oidc && (
        <div class="form-actions">
          <button type="button" onClick={() => location.assign(providerSignInUrl)}>
            Sign in with your identity provider
          </button>
        </div>
      )}
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
          The token is <code>WAYPOST_ADMIN_TOKEN</code>, or the file the server named in its log when it created one, or an API token (
          <code>wpt_…</code>) made on the Tokens page. It is kept for this tab only.
        </p>
      </form>
    </main>
  );
}
