// The identity provider's side of signing in, served by the server under
// /auth/: whether sign-in through the provider is configured, whether this
// browser has a session (its cookie is HttpOnly: only the server can say),
// and signing that session out.

export interface AuthUser {
  id: string;
  email: string;
  name: string;
  role: string;
}

export interface AuthSession {
  signedIn: boolean;
  /** Whether sign-in through the identity provider is configured. */
  oidc: boolean;
  user?: AuthUser;
  /** The session's CSRF token: sent as X-CSRF-Token with every call. */
  csrfToken?: string;
}

const noSession: AuthSession = { signedIn: false, oidc: false };

/** Where "Sign in with your identity provider" goes: the server redirects to the provider and back to the console. */
export const providerSignInUrl = "/auth/login?return_to=/console/";

const isString = (value: unknown): value is string => typeof value === "string";

function userOf(value: unknown): AuthUser | undefined {
  if (!value || typeof value !== "object") return undefined;
  const { id, email, name, role } = value as Record<string, unknown>;
  if (!isString(id) || !isString(email)) return undefined;
  return { id, email, name: isString(name) ? name : "", role: isString(role) ? role : "" };
}

/** What `GET /auth/session` answered; a server without the route (404), or any answer that is not its JSON, is no session and no provider. */
export function authSessionOf(body: unknown): AuthSession {
  if (!body || typeof body !== "object") return noSession;
  const { signedIn, oidc, user, csrfToken } = body as Record<string, unknown>;
  const session: AuthSession = { signedIn: signedIn === true && isString(csrfToken) && csrfToken !== "", oidc: oidc === true };
  const named = userOf(user);
  if (session.signedIn && named) session.user = named;
  if (session.signedIn) session.csrfToken = csrfToken as string;
  return session;
}

export async function readAuthSession(): Promise<AuthSession> {
  try {
    const response = await fetch("/auth/session", { credentials: "same-origin", headers: { accept: "application/json" } });
    if (!response.ok) return noSession;
    return authSessionOf(await response.json());
  } catch {
    return noSession;
  }
}

/** Ends the session on the server (its cookie is cleared there); a failure leaves it to expire. */
export async function endAuthSession(csrfToken: string): Promise<void> {
  try {
    await fetch("/auth/logout", { method: "POST", credentials: "same-origin", headers: { "X-CSRF-Token": csrfToken } });
  } catch {
    // Offline: the page forgets the session all the same.
  }
}
