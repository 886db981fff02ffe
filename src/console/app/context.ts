import { createContext } from "preact";
import { useCallback, useContext, useEffect, useState } from "preact/hooks";
import type { Principal } from "../../../gen/waypost/v1/access_pb.js";
import type { Api } from "./api.js";
import { describeError, isUnauthenticated } from "./errors.js";
import { may, type Rpc } from "./permissions.js";

export interface Session {
  api: Api;
  /** Who the credential is (GetCurrentPrincipal): what the pages offer follows its scopes. */
  principal: Principal;
  /** "token": typed on the sign-in page; "provider": the identity provider's session cookie. */
  via: "token" | "provider";
  /** Drops the credential (after a refusal or on "Sign out"). */
  signOut(reason?: string): void;
}

export const SessionContext = createContext<Session | null>(null);

export function useSession(): Session {
  const session = useContext(SessionContext);
  if (!session) throw new Error("useSession outside a signed-in page");
  return session;
}

/** Whether the signed-in principal may call `rpc`: a page offers only what it may. */
export function useMay(): (rpc: Rpc) => boolean {
  const { principal } = useSession();
  return (rpc) => may(principal, rpc);
}

export interface Loaded<T> {
  data: T | undefined;
  error: string | undefined;
  loading: boolean;
  reload(): void;
}

/**
 * Runs an RPC-backed load when `deps` change (and on reload()), keeping the
 * last data while a reload runs. A refused token signs the tab out.
 */
export function useLoad<T>(load: (api: Api) => Promise<T>, deps: unknown[]): Loaded<T> {
  const session = useSession();
  const [state, setState] = useState<{ data?: T; error?: string; loading: boolean }>({ loading: true });
  const [generation, setGeneration] = useState(0);
  useEffect(() => {
    let current = true;
    setState((s) => ({ ...s, loading: true }));
    load(session.api).then(
      (data) => current && setState({ data, loading: false }),
      (error: unknown) => {
        if (!current) return;
        if (isUnauthenticated(error)) session.signOut(describeError(error));
        setState((s) => ({ ...s, error: describeError(error), loading: false }));
      },
    );
    return () => {
      current = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, generation]);
  const reload = useCallback(() => setGeneration((g) => g + 1), []);
  return { data: state.data, error: state.error, loading: state.loading, reload };
}

/**
 * Runs an action, reporting its error in `error` (and signing out when the
 * token is refused); `onDone` runs after each one that succeeds (a list
 * reloads).
 */
export function useAction(onDone?: () => void): {
  busy: boolean;
  error: string | undefined;
  run<T>(action: (api: Api) => Promise<T>): Promise<T | undefined>;
  /** Asks `question` first (Delete the source …?): declined, it runs nothing and resolves undefined. */
  confirmRun<T>(question: string, action: (api: Api) => Promise<T>): Promise<T | undefined>;
  clear(): void;
} {
  const session = useSession();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const run = useCallback(
    async <T>(action: (api: Api) => Promise<T>): Promise<T | undefined> => {
      setBusy(true);
      setError(undefined);
      try {
        const done = await action(session.api);
        onDone?.();
        return done;
      } catch (caught) {
        if (isUnauthenticated(caught)) session.signOut(describeError(caught));
        setError(describeError(caught));
        return undefined;
      } finally {
        setBusy(false);
      }
    },
    [session, onDone],
  );
  const confirmRun = <T>(question: string, action: (api: Api) => Promise<T>) =>
    confirm(question) ? run(action) : Promise.resolve(undefined);
  return { busy, error, run, confirmRun, clear: () => setError(undefined) };
}
