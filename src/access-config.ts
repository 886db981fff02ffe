import { ConfigError, int } from "./config-values.js";

// Team access settings (docs/access.md): OpenID Connect sign-in, session
// timeouts, and the audit log's retention and forwarding. Without
// WAYPOST_OIDC_ISSUER nobody signs in: the admin token and API tokens work
// as before.

export type OidcRole = "viewer" | "editor" | "admin" | "owner";
const roleNames: readonly OidcRole[] = ["viewer", "editor", "admin", "owner"];

export interface OidcConfig {
  /** The provider's issuer URL; its discovery document is read at start. */
  issuer: string;
  clientId: string;
  /** Absent: a public client (PKCE alone). */
  clientSecret: string | undefined;
  /** Where the provider sends the browser back: WAYPOST_PUBLIC_URL + /auth/callback, unless WAYPOST_OIDC_REDIRECT_URL. */
  redirectUrl: string | undefined;
  /** Scopes asked for (the groups claim may need one more, e.g. "groups"). */
  scopes: string;
  /** Emails of these domains may sign in (none listed and no groups listed: everyone the provider signs in). */
  allowedDomains: readonly string[];
  /** Members of these groups may sign in. */
  allowedGroups: readonly string[];
  /** The ID token's (or userinfo's) claim holding the groups. */
  groupsClaim: string;
  /** Group → role; the highest role among the user's groups wins, and is set at every sign-in. */
  roleMapping: ReadonlyMap<string, OidcRole>;
  /** The role of a new user no mapping names (the very first user becomes owner). */
  defaultRole: OidcRole;
}

export interface AccessConfig {
  oidc: OidcConfig | undefined;
  /** The console's public origin (cookies' Secure flag, the redirect URL); absent: the request's own. */
  publicUrl: string | undefined;
  sessions: { idleMs: number; absoluteMs: number };
  /** How long tokens made by `waypost login` last. */
  cliTokenMs: number;
  auditRetentionMs: number;
  /** Every audit event is also ingested as a track call into this source. */
  auditSourceId: string | undefined;
  /** Anonymous sign-in requests a second per client address, and sign-ins under way at once (sign-in/sign-in-throttle.ts). */
  signInThrottle: { perSecond: number; maxPending: number };
}

const list = (raw: string | undefined) =>
  (raw ?? "")
    .split(",")
    .map((item) => item.trim())
    .filter(Boolean);

function url(name: string, raw: string | undefined): string | undefined {
  if (raw === undefined || raw === "") return undefined;
  try {
    const parsed = new URL(raw);
    if (parsed.protocol !== "https:" && parsed.protocol !== "http:") throw new Error();
    // Trailing slashes trimmed by hand: /\/+$/ backtracks quadratically on a long run of slashes.
    let end = raw.length;
    while (end > 0 && raw[end - 1] === "/") end--;
    return raw.slice(0, end);
  } catch {
    throw new ConfigError(`${name} must be an absolute http(s) URL, got ${JSON.stringify(raw)}`);
  }
}

function role(name: string, raw: string, fallback: OidcRole): OidcRole {
  if (raw === "") return fallback;
  if (!(roleNames as readonly string[]).includes(raw))
    throw new ConfigError(`${name} must be one of ${roleNames.join(", ")}, got ${JSON.stringify(raw)}`);
  return raw as OidcRole;
}

/** WAYPOST_OIDC_ROLE_MAPPING: "group=role,group=role". */
function roleMapping(raw: string | undefined): Map<string, OidcRole> {
  const mapping = new Map<string, OidcRole>();
  for (const pair of list(raw)) {
    const at = pair.lastIndexOf("=");
    if (at <= 0)
      throw new ConfigError(`WAYPOST_OIDC_ROLE_MAPPING must be group=role pairs separated by commas, got ${JSON.stringify(pair)}`);
    mapping.set(pair.slice(0, at).trim(), role("WAYPOST_OIDC_ROLE_MAPPING", pair.slice(at + 1).trim(), "viewer"));
  }
  return mapping;
}

function parseOidc(env: Record<string, string | undefined>, publicUrl: string | undefined): OidcConfig | undefined {
  const issuer = url("WAYPOST_OIDC_ISSUER", env.WAYPOST_OIDC_ISSUER);
  if (!issuer) return undefined;
  const clientId = env.WAYPOST_OIDC_CLIENT_ID ?? "";
  if (!clientId) throw new ConfigError("WAYPOST_OIDC_CLIENT_ID is required with WAYPOST_OIDC_ISSUER");
  const redirectUrl =
    url("WAYPOST_OIDC_REDIRECT_URL", env.WAYPOST_OIDC_REDIRECT_URL) ?? (publicUrl ? `${publicUrl}/auth/callback` : undefined);
  return {
    issuer,
    clientId,
    clientSecret: env.WAYPOST_OIDC_CLIENT_SECRET || undefined,
    redirectUrl,
    scopes: env.WAYPOST_OIDC_SCOPES || "openid email profile",
    allowedDomains: list(env.WAYPOST_OIDC_ALLOWED_DOMAINS).map((domain) => domain.toLowerCase().replace(/^@/, "")),
    allowedGroups: list(env.WAYPOST_OIDC_ALLOWED_GROUPS),
    groupsClaim: env.WAYPOST_OIDC_GROUPS_CLAIM || "groups",
    roleMapping: roleMapping(env.WAYPOST_OIDC_ROLE_MAPPING),
    defaultRole: role("WAYPOST_OIDC_DEFAULT_ROLE", env.WAYPOST_OIDC_DEFAULT_ROLE ?? "", "viewer"),
  };
}

export function parseAccess(env: Record<string, string | undefined>): AccessConfig {
  const publicUrl = url("WAYPOST_PUBLIC_URL", env.WAYPOST_PUBLIC_URL);
  const minute = 60_000;
  return {
    oidc: parseOidc(env, publicUrl),
    publicUrl,
    sessions: {
      idleMs: int(env, "WAYPOST_SESSION_IDLE_MINUTES", 60, 1, 7 * 24 * 60) * minute,
      absoluteMs: int(env, "WAYPOST_SESSION_MAX_HOURS", 12, 1, 30 * 24) * 60 * minute,
    },
    cliTokenMs: int(env, "WAYPOST_CLI_TOKEN_HOURS", 12, 1, 30 * 24) * 60 * minute,
    auditRetentionMs: int(env, "WAYPOST_AUDIT_RETENTION_DAYS", 365, 1, 3650) * 24 * 60 * minute,
    auditSourceId: env.WAYPOST_AUDIT_SOURCE_ID || undefined,
    signInThrottle: {
      perSecond: int(env, "WAYPOST_SIGN_IN_RATE", 5, 1, 100_000),
      maxPending: int(env, "WAYPOST_SIGN_IN_MAX_PENDING", 10_000, 1, 10_000_000),
    },
  };
}
