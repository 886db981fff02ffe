import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";

// The tokens `waypost login` keeps, one per server URL, in
// credentials.json of the CLI's config directory: $WAYPOST_CONFIG_DIR, or
// $XDG_CONFIG_HOME/waypost, or ~/.config/waypost. The file is the user's
// alone (0600, in a 0700 directory) and is replaced whole, never edited in
// place, so a crash mid-write leaves the old one.

export interface StoredLogin {
  token: string;
  /** ISO time the token stops working; null: no expiry known. */
  expiresAt: string | null;
  storedAt: string;
}

interface CredentialsFile {
  version: 1;
  servers: Record<string, StoredLogin>;
}

export function configDir(env: NodeJS.ProcessEnv): string {
  if (env.WAYPOST_CONFIG_DIR) return path.resolve(env.WAYPOST_CONFIG_DIR);
  if (env.XDG_CONFIG_HOME) return path.join(path.resolve(env.XDG_CONFIG_HOME), "waypost");
  return path.join(env.HOME || homedir(), ".config", "waypost");
}

export function credentialsFile(env: NodeJS.ProcessEnv): string {
  return path.join(configDir(env), "credentials.json");
}

/** The key of a server: its URL without a trailing slash, as --url is compared. */
export function serverKey(url: string): string {
  const href = new URL(url).href;
  return href.endsWith("/") ? href.slice(0, -1) : href;
}

/** The file's logins; a missing or unreadable file is none (a broken one is replaced by the next login). */
function readAll(env: NodeJS.ProcessEnv): CredentialsFile {
  try {
    const parsed = JSON.parse(readFileSync(credentialsFile(env), "utf8")) as Partial<CredentialsFile>;
    if (parsed && typeof parsed.servers === "object" && parsed.servers !== null) return { version: 1, servers: parsed.servers };
  } catch {
    // None.
  }
  return { version: 1, servers: {} };
}

function writeAll(env: NodeJS.ProcessEnv, contents: CredentialsFile): void {
  const file = credentialsFile(env);
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(contents, null, 2)}\n`, { mode: 0o600 });
  // The mode of a file that existed already (a temporary left by a crash) is set too.
  chmodSync(temporary, 0o600);
  renameSync(temporary, file);
}

/** The stored token of `serverUrl`, unless it has expired. */
export function storedLoginToken(env: NodeJS.ProcessEnv, serverUrl: string, now: Date): string | undefined {
  const login = readAll(env).servers[serverKey(serverUrl)];
  if (!login || typeof login.token !== "string" || login.token === "") return undefined;
  if (login.expiresAt && !(Date.parse(login.expiresAt) > now.getTime())) return undefined;
  return login.token;
}

export function storeLogin(env: NodeJS.ProcessEnv, serverUrl: string, login: StoredLogin): string {
  const contents = readAll(env);
  contents.servers[serverKey(serverUrl)] = login;
  writeAll(env, contents);
  return credentialsFile(env);
}

/** Forgets the token of `serverUrl`; false when there was none. */
export function removeStoredLogin(env: NodeJS.ProcessEnv, serverUrl: string): boolean {
  const contents = readAll(env);
  const key = serverKey(serverUrl);
  if (!(key in contents.servers)) return false;
  delete contents.servers[key];
  writeAll(env, contents);
  return true;
}
