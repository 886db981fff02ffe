import { createHash, randomUUID, timingSafeEqual } from "node:crypto";
import type { DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextKey, createContextValues, type ContextValues, type Interceptor } from "@connectrpc/connect";
import type pg from "pg";
import { TrackingService } from "../../gen/waypost/v1/tracking_pb.js";
import { CredentialRefused, type Credentials } from "../access/credentials.js";
import type { Principal } from "../access/principal.js";
import { sessionIdFromCookie } from "../access/session-cookie.js";
import { selectSourceByWriteKeyHash } from "../db/queries/sources.js";
import { ruleOf } from "./access/rpc-scopes.js";

/** The source a write key authorised; set by the auth interceptor. */
export const sourceKey = createContextKey<{ id: string } | undefined>(undefined, { description: "authenticated source" });

/** Who made an admin request; set by the gate. */
export const principalKey = createContextKey<Principal | undefined>(undefined, { description: "admin principal" });

/** Where an admin request came from, for the audit log. */
export interface RequestOrigin {
  requestId: string;
  clientAddress: string;
  userAgent: string;
}
export const requestOriginKey = createContextKey<RequestOrigin>(
  { requestId: "", clientAddress: "", userAgent: "" },
  { description: "request origin" },
);

export interface AuthOptions {
  pool: pg.Pool;
  /** Admin credentials: the admin token, API tokens, console sessions. */
  credentials: Credentials;
  /** How long a write key lookup is cached (rotations elsewhere take this long to reach this process). */
  writeKeyCacheMs?: number;
}

/** What the gate reads of a request: headers and the peer's address, never the body. */
export interface GateRequest {
  headers: Record<string, string | string[] | undefined>;
  socket?: { remoteAddress?: string | undefined } | undefined;
}

export interface Authenticator {
  /**
   * Checks an RPC's credentials and scope from its headers, before its
   * body is read: the context values for the call, or the error to answer.
   */
  gate(req: GateRequest, service: DescService, method: string): Promise<ContextValues | ConnectError>;
  /** The same check inside Connect, for handlers not behind the gate. */
  interceptor: Interceptor;
  /** Source of a write key, or undefined; cached briefly. */
  sourceForWriteKey(writeKey: string): Promise<{ id: string } | undefined>;
  /** Forget cached lookups, after a rotation or a deletion. */
  forgetWriteKeys(): void;
}

export function hashWriteKey(writeKey: string): Buffer {
  return createHash("sha256").update(writeKey, "utf8").digest();
}

const header = (req: GateRequest, name: string) => {
  const value = req.headers[name];
  return typeof value === "string" ? value : undefined;
};

/** A caller's X-Request-Id when it is a plain token, else a new one. */
function requestIdOf(req: GateRequest): string {
  const given = header(req, "x-request-id");
  return given && /^[\w.:-]{1,128}$/.test(given) ? given : randomUUID();
}

function originOf(req: GateRequest): RequestOrigin {
  return {
    requestId: requestIdOf(req),
    clientAddress: req.socket?.remoteAddress ?? "",
    userAgent: (header(req, "user-agent") ?? "").slice(0, 512),
  };
}

/**
 * A console request rides on its session cookie, which a browser also
 * sends from another site's page: it must carry the session's CSRF token
 * (which only our own pages can read) and, when the browser names one, our
 * own origin.
 */
function crossSiteRefusal(req: GateRequest, principal: Principal): ConnectError | undefined {
  const sent = header(req, "x-csrf-token") ?? "";
  const expected = principal.csrfToken ?? "";
  const matches = sent.length === expected.length && expected.length > 0 && timingSafeEqual(Buffer.from(sent), Buffer.from(expected));
  if (!matches) return new ConnectError("X-CSRF-Token header missing or wrong for a console session", Code.PermissionDenied);
  const origin = header(req, "origin");
  const host = header(req, "host");
  if (origin !== undefined && (!host || origin.replace(/^https?:\/\//, "") !== host)) {
    return new ConnectError(`requests from origin ${origin} are refused`, Code.PermissionDenied);
  }
  return undefined;
}

/**
 * Write keys authorise TrackingService only; every other service takes an
 * admin credential (the admin token, an API token, or a console session
 * with its CSRF token) holding the RPC's scope (api/access/rpc-scopes.ts).
 * Keys and tokens are stored and looked up as sha256 hashes, and compared
 * in constant time, so neither a database dump nor timing reveals one.
 */
export function createAuthenticator(options: AuthOptions): Authenticator {
  const cacheMs = options.writeKeyCacheMs ?? 5_000;
  const cache = new Map<string, { source: { id: string } | undefined; expires: number }>();
  const { credentials } = options;

  async function sourceForWriteKey(writeKey: string) {
    const hash = hashWriteKey(writeKey);
    const cacheKey = hash.toString("base64");
    const hit = cache.get(cacheKey);
    if (hit && hit.expires > Date.now()) return hit.source;
    const row = await selectSourceByWriteKeyHash(options.pool, hash);
    const source = row && timingSafeEqual(row.write_key_hash, hash) ? { id: row.id } : undefined;
    if (cache.size > 10_000) cache.clear();
    cache.set(cacheKey, { source, expires: Date.now() + cacheMs });
    return source;
  }

  async function principalOf(req: GateRequest, origin: RequestOrigin): Promise<Principal | ConnectError> {
    const authorization = header(req, "authorization");
    if (authorization !== undefined) {
      const credential = parseAuthorization(authorization);
      const principal = credential ? await credentials.bearer(credential, origin.clientAddress) : new CredentialRefused("");
      if (principal instanceof CredentialRefused) {
        return new ConnectError(
          principal.message || "admin token or API token required (Authorization: Bearer <token>)",
          Code.Unauthenticated,
        );
      }
      return principal;
    }
    const sessionId = sessionIdFromCookie(header(req, "cookie"));
    if (sessionId === undefined) return new ConnectError("admin token required (Authorization: Bearer <token>)", Code.Unauthenticated);
    const principal = await credentials.session(sessionId);
    if (principal instanceof CredentialRefused) return new ConnectError(principal.message, Code.Unauthenticated);
    return crossSiteRefusal(req, principal) ?? principal;
  }

  async function gate(req: GateRequest, service: DescService, method: string): Promise<ContextValues | ConnectError> {
    const values = createContextValues();
    if (service.typeName === TrackingService.typeName) {
      const credential = parseAuthorization(header(req, "authorization") ?? null);
      const source = credential ? await sourceForWriteKey(credential) : undefined;
      if (!source) return new ConnectError("missing or unknown write key", Code.Unauthenticated);
      return values.set(sourceKey, source);
    }
    const origin = originOf(req);
    const principal = await principalOf(req, origin);
    if (principal instanceof ConnectError) return principal;
    const rule = ruleOf(service.typeName, method);
    if (!rule) return new ConnectError(`${service.typeName}/${method} declares no scope, so nobody may call it`, Code.PermissionDenied);
    if (rule.scope !== "authenticated" && !principal.scopes.has(rule.scope)) {
      return new ConnectError(`${principal.name} lacks the scope ${rule.scope} (role ${principal.role})`, Code.PermissionDenied);
    }
    return values.set(principalKey, principal).set(requestOriginKey, origin);
  }

  const interceptor: Interceptor = (next) => async (req) => {
    // Requests that passed the gate carry their source or principal already.
    if (req.contextValues.get(sourceKey) || req.contextValues.get(principalKey)) return next(req);
    const headers: Record<string, string> = {};
    req.header.forEach((value, name) => {
      headers[name] = value;
    });
    const result = await gate({ headers }, req.service, req.method.name);
    if (result instanceof ConnectError) throw result;
    const source = result.get(sourceKey);
    if (source) req.contextValues.set(sourceKey, source);
    const principal = result.get(principalKey);
    if (principal) req.contextValues.set(principalKey, principal).set(requestOriginKey, result.get(requestOriginKey));
    return next(req);
  };

  return { gate, interceptor, sourceForWriteKey, forgetWriteKeys: () => cache.clear() };
}

/** `Basic base64(key:)` (the analytics SDK convention) or `Bearer key`. */
export function parseAuthorization(header: string | null): string | undefined {
  if (!header) return undefined;
  const space = header.indexOf(" ");
  if (space < 0) return undefined;
  const scheme = header.slice(0, space).toLowerCase();
  const value = header.slice(space + 1).trim();
  if (scheme === "bearer") return value || undefined;
  if (scheme === "basic") {
    const decoded = Buffer.from(value, "base64").toString("utf8");
    const colon = decoded.indexOf(":");
    const user = colon < 0 ? decoded : decoded.slice(0, colon);
    return user || undefined;
  }
  return undefined;
}
