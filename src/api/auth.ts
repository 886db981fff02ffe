import { createHash, timingSafeEqual } from "node:crypto";
import type { DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextKey, createContextValues, type ContextValues, type Interceptor } from "@connectrpc/connect";
import type pg from "pg";
import { TrackingService } from "../../gen/waypost/v1/tracking_pb.js";
import { selectSourceByWriteKeyHash } from "../db/queries/sources.js";

/** The source a write key authorised; set by the auth interceptor. */
export const sourceKey = createContextKey<{ id: string } | undefined>(undefined, { description: "authenticated source" });

export interface AuthOptions {
  pool: pg.Pool;
  adminToken: string;
  /** How long a write key lookup is cached (rotations elsewhere take this long to reach this process). */
  writeKeyCacheMs?: number;
}

export interface Authenticator {
  /**
   * Checks an RPC's credentials from its Authorization header, before its
   * body is read: the context values for the call, or the error to answer.
   */
  gate(authorization: string | null, service: DescService): Promise<ContextValues | ConnectError>;
  /** The same check inside Connect, for handlers not behind the gate. */
  interceptor: Interceptor;
  /** Source of a write key, or undefined; cached briefly. */
  sourceForWriteKey(writeKey: string): Promise<{ id: string } | undefined>;
  /** Forget cached lookups, after a rotation or a deletion. */
  forgetWriteKeys(): void;
  isAdminToken(token: string): boolean;
}

export function hashWriteKey(writeKey: string): Buffer {
  return createHash("sha256").update(writeKey, "utf8").digest();
}

/**
 * Write keys authorise TrackingService only; the admin token everything else.
 * Keys are stored and looked up as sha256 hashes, and compared in constant
 * time, so neither a database dump nor timing reveals one.
 */
export function createAuthenticator(options: AuthOptions): Authenticator {
  const cacheMs = options.writeKeyCacheMs ?? 5_000;
  const cache = new Map<string, { source: { id: string } | undefined; expires: number }>();
  const adminHash = createHash("sha256").update(options.adminToken).digest();

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

  function isAdminToken(token: string): boolean {
    return timingSafeEqual(createHash("sha256").update(token).digest(), adminHash);
  }

  async function gate(authorization: string | null, service: DescService): Promise<ContextValues | ConnectError> {
    const credential = parseAuthorization(authorization);
    const values = createContextValues();
    if (service.typeName === TrackingService.typeName) {
      const source = credential ? await sourceForWriteKey(credential) : undefined;
      if (!source) return new ConnectError("missing or unknown write key", Code.Unauthenticated);
      return values.set(sourceKey, source);
    }
    if (!credential || !isAdminToken(credential)) {
      return new ConnectError("admin token required (Authorization: Bearer <token>)", Code.Unauthenticated);
    }
    return values;
  }

  const interceptor: Interceptor = (next) => async (req) => {
    // Requests that passed the gate carry their source already.
    if (req.service.typeName === TrackingService.typeName && req.contextValues.get(sourceKey)) return next(req);
    const result = await gate(req.header.get("authorization"), req.service);
    if (result instanceof ConnectError) throw result;
    const source = result.get(sourceKey);
    if (source) req.contextValues.set(sourceKey, source);
    return next(req);
  };

  return { gate, interceptor, sourceForWriteKey, forgetWriteKeys: () => cache.clear(), isAdminToken };
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
