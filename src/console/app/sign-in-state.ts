import { useEffect, useRef, useState } from "preact/hooks";
import { createApi, type Credential } from "./api.js";
import { endAuthSession, readAuthSession } from "./auth-session.js";
import type { Session } from "./context.js";
import { describeError, isUnauthenticated } from "./errors.js";
import { forgetToken, readToken, saveToken } from "./session.js";

export type SignInState =
  | { phase: "checking" }
  | { phase: "signed-out"; oidc: boolean; notice: string | undefined }
  | { phase: "signed-in"; session: Session };

/**
 * Where the tab stands: checking, signed out (with whether the identity
 * provider is offered), or signed in with a token or a provider session
 * and the principal it is. On load a token kept in the tab comes first,
 * then the provider's session; either is asked GetCurrentPrincipal before
 * any page shows, so pages know what to offer.
 */
export function useSignIn(): { state: SignInState; signInWithToken(token: string): Promise<void> } {
  const [state, setState] = useState<SignInState>({ phase: "checking" });
  const oidc = useRef(false);
  const signedOut = (notice?: string) => setState({ phase: "signed-out", oidc: oidc.current, notice });

  /** Asks who `credential` is and signs in as that; throws what refused it. */
  async function enter(credential: Credential): Promise<void> {
    const api = createApi(credential);
    const { principal } = await api.access.getCurrentPrincipal({});
    if (!principal) throw new Error("The server did not say who this is.");
    const via = "token" in credential ? "token" : "provider";
    const signOut = (reason?: string) => {
      if ("token" in credential) forgetToken();
      // A refused session is over already; "Sign out" ends it on the server first, so a reload finds none.
      else if (reason === undefined) return void endAuthSession(credential.csrfToken).then(() => signedOut());
      signedOut(reason);
    };
    setState({ phase: "signed-in", session: { api, principal, via, signOut } });
  }

  useEffect(() => {
    let current = true;
    (async () => {
      const auth = await readAuthSession();
      if (!current) return;
      oidc.current = auth.oidc;
      const token = readToken();
      let notice: string | undefined;
      if (token !== null) {
        try {
          return await enter({ token });
        } catch (caught) {
          if (isUnauthenticated(caught)) forgetToken();
          notice = describeError(caught);
        }
      }
      if (auth.signedIn && auth.csrfToken) {
        try {
          return await enter({ csrfToken: auth.csrfToken });
        } catch (caught) {
          notice = describeError(caught);
        }
      }
      signedOut(notice);
    })();
    return () => {
      current = false;
    };
    // Once, on load.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  async function signInWithToken(token: string): Promise<void> {
    await enter({ token });
    saveToken(token);
  }
  return { state, signInWithToken };
}
