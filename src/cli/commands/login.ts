import { spawn } from "node:child_process";
import { hostname } from "node:os";
import type { Command } from "commander";
import { AccessService, TokenService } from "../../../gen/waypost/v1/access_pb.js";
import type { CliContext, CliIo, Wire } from "../context.js";
import { CommandFailure } from "../errors.js";
import { removeStoredLogin, storedLoginToken, storeLogin } from "../stored-login.js";

// `waypost login`: signs in through the server's identity provider in a
// browser and keeps the API token the server makes for it (stored-login.ts),
// which then authenticates every command against that server. `waypost
// logout` revokes it on the server and forgets it.

const pollIntervalMs = 1000;

interface Started {
  loginUrl: string;
  state: string;
  pollSecret: string;
  code: string;
  expiresInSeconds: number;
}

export function registerLogin(program: Command, wire: Wire, io: CliIo): void {
  program
    .command("login")
    .description(
      "Sign in through the server's identity provider and keep a token for this server (WAYPOST_CONFIG_DIR, else ~/.config/waypost)",
    )
    .option("--no-browser", "only print the URL to open (on another machine, or where no browser opens)")
    .action(wire((ctx, options: { browser: boolean }) => login(ctx, io.env, options.browser)));
  program
    .command("logout")
    .description("Forget the token `waypost login` kept for this server")
    .action(
      wire(async (ctx) => {
        // Whatever its expiry says here: the server's clock decides whether it still works.
        const token = storedLoginToken(io.env, ctx.serverUrl, new Date(0));
        const revoked = token ? await revokeOnServer(ctx, token) : false;
        const removed = removeStoredLogin(io.env, ctx.serverUrl);
        if (!removed) ctx.out(`No token was kept for ${ctx.serverUrl}.`);
        else ctx.out(revoked ? `Revoked and forgot the token for ${ctx.serverUrl}.` : `Forgot the token for ${ctx.serverUrl}.`);
      }),
    );
}

/**
 * Revokes the kept token on the server, so a copy of the file opens nothing
 * either. A server that cannot be reached, or a token already dead, still
 * lets logout forget it: true only when the server revoked it now.
 */
async function revokeOnServer(ctx: CliContext, token: string): Promise<boolean> {
  try {
    const { principal } = await ctx.withToken(AccessService, token).getCurrentPrincipal({});
    if (principal?.kind !== "token") return false;
    await ctx.withToken(TokenService, token).revokeToken({ id: principal.id });
    return true;
  } catch (error) {
    ctx.err(`The server did not revoke the token (${error instanceof Error ? error.message : String(error)}); forgetting it here.`);
    return false;
  }
}

async function login(ctx: CliContext, env: NodeJS.ProcessEnv, openBrowser: boolean): Promise<void> {
  const started = (await call(ctx, "/auth/cli/start", {})).body as Partial<Started>;
  if (typeof started.loginUrl !== "string" || typeof started.state !== "string" || typeof started.pollSecret !== "string") {
    throw new CommandFailure(
      `${ctx.serverUrl}/auth/cli/start did not answer a sign-in: is it a Waypost with sign-in (WAYPOST_OIDC_ISSUER)?`,
    );
  }
  return waitForSignIn(ctx, env, openBrowser, { code: "", expiresInSeconds: 600, ...started } as Started);
}

async function waitForSignIn(ctx: CliContext, env: NodeJS.ProcessEnv, openBrowser: boolean, started: Started): Promise<void> {
  const deadline = Date.now() + started.expiresInSeconds * 1000;
  ctx.out(`Open this URL in a browser to sign in (it shows the code ${started.code}):\n\n  ${started.loginUrl}\n`);
  if (openBrowser) tryToOpen(started.loginUrl);
  ctx.err("Waiting for the sign-in in the browser (Ctrl-C to give up)…");
  for (;;) {
    if (Date.now() > deadline) throw new CommandFailure("the sign-in expired before it was completed: run waypost login again");
    let answer: { status: number; body: Record<string, unknown> };
    try {
      answer = await call(ctx, "/auth/cli/poll", { state: started.state, pollSecret: started.pollSecret }, [200, 202, 410]);
    } catch (error) {
      // A server restarting, a network blip: the sign-in is still there to collect.
      if (!(error instanceof TypeError)) throw error;
      answer = { status: 202, body: {} };
    }
    if (answer.status === 200) {
      const token = String(answer.body.token ?? "");
      const expiresAt = typeof answer.body.expiresAt === "string" ? answer.body.expiresAt : null;
      const file = storeLogin(env, ctx.serverUrl, { token, expiresAt, storedAt: new Date().toISOString() });
      ctx.out(`Signed in to ${ctx.serverUrl}: token ${token.slice(0, 10)}… kept in ${file}${expiresAt ? ` until ${expiresAt}` : ""}.`);
      return;
    }
    if (answer.status === 410) {
      throw new CommandFailure(`the sign-in was refused or expired (the browser says why): ${String(answer.body.error ?? "")}`);
    }
    await sleep(pollIntervalMs, ctx.signal);
  }
}

/** One JSON request to the server's /auth/ routes; an answer outside `expected` is a failure naming the server's error. */
async function call(
  ctx: CliContext,
  path: string,
  body: unknown,
  expected: readonly number[] = [200],
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${ctx.serverUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", "user-agent": `waypost-cli (${hostname()})` },
    body: JSON.stringify(body),
    signal: ctx.signal,
  }).catch((error: unknown) => {
    if (ctx.signal.aborted) throw new CommandFailure("login cancelled");
    throw error;
  });
  const text = await response.text();
  let parsed: Record<string, unknown> = {};
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // Not JSON: not Waypost's /auth/ (an old server, a proxy's page).
  }
  if (!expected.includes(response.status)) {
    const reason = typeof parsed.error === "string" ? parsed.error : `${text.slice(0, 200) || "no answer"}`;
    throw new CommandFailure(`${ctx.serverUrl}${path} answered ${response.status}: ${reason}`);
  }
  return { status: response.status, body: parsed };
}

/** The desktop's opener, if there is one; failing to open is fine (the URL is printed). */
function tryToOpen(url: string): void {
  const opener = process.platform === "darwin" ? "open" : process.platform === "win32" ? "explorer" : "xdg-open";
  try {
    const child = spawn(opener, [url], { detached: true, stdio: "ignore" });
    child.on("error", () => {});
    child.unref();
  } catch {
    // Printed above.
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new CommandFailure("login cancelled"));
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new CommandFailure("login cancelled"));
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
