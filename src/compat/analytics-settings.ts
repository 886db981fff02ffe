import type { Req, RouteHandler } from "../http/types.js";
import { sendAsset, textAsset } from "./analytics-js-bundle.js";
import { sendCompatError } from "./errors.js";
import { CompatError } from "./errors.js";

/**
 * analytics.js's settings for a source, as Segment's CDN answers them at
 * `/v1/projects/<writeKey>/settings`, pointing the Segment.io integration
 * (the one that sends calls) at this Waypost: a page that loads analytics.js
 * from Waypost sends to it and to nothing else (docs/first-party-collection.md).
 */

const settingsPath = /^\/v1\/projects\/([^/]{1,200})\/settings$/;
/** A Host header: a name or IPv4 address, or a bracketed IPv6 address, with an optional port. */
const hostHeader = /^(?:[A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$/;

export interface AnalyticsSettingsOptions {
  /** The source a write key belongs to, or undefined (the authenticator's cached lookup). */
  sourceForWriteKey(writeKey: string): Promise<{ id: string } | undefined>;
}

/** The scheme and host a browser reached this request at: TLS or X-Forwarded-Proto says https. */
export function requestOrigin(req: Req): { protocol: "http" | "https"; host: string } | undefined {
  const host = req.headers.host ?? (req.headers as Record<string, string | string[] | undefined>)[":authority"];
  if (typeof host !== "string" || !hostHeader.test(host)) return undefined;
  const forwarded = String(req.headers["x-forwarded-proto"] ?? "")
    .split(",")[0]!
    .trim()
    .toLowerCase();
  const encrypted = "encrypted" in req.socket && req.socket.encrypted === true;
  return { protocol: encrypted || forwarded === "https" ? "https" : "http", host };
}

/** The settings analytics-next reads: the Segment.io integration aimed at `apiHost`, nothing else loaded, no remote metrics. */
export function analyticsSettings(writeKey: string, origin: { protocol: string; host: string }): Record<string, unknown> {
  return {
    integrations: {
      "Segment.io": {
        apiKey: writeKey,
        apiHost: `${origin.host}/v1`,
        protocol: origin.protocol,
        unbundledIntegrations: [],
        addBundledMetadata: true,
        maybeBundledConfigIds: {},
      },
    },
    plan: {
      track: { __default: { enabled: true, integrations: {} } },
      identify: { __default: { enabled: true } },
      group: { __default: { enabled: true } },
    },
    analyticsNextEnabled: true,
    middlewareSettings: {},
    enabledMiddleware: {},
    edgeFunction: {},
    legacyVideoPluginsEnabled: false,
    remotePlugins: [],
    // Segment's own error counters would go to api.segment.io: off.
    metrics: { sampleRate: 0 },
    autoInstrumentationSettings: { sampleRate: 0 },
  };
}

/** GET `/v1/projects/<writeKey>/settings`: 404 for a write key of no source, 400 without a usable Host. */
export function createAnalyticsSettingsRoute(options: AnalyticsSettingsOptions): RouteHandler {
  return async (req, res, path) => {
    const match = settingsPath.exec(path);
    if (!match) return false;
    const writeKey = decodedKey(match[1]!);
    const origin = requestOrigin(req);
    if (!origin) {
      sendCompatError(res, new CompatError(400, "invalid_request", "the request has no usable Host header"));
      return true;
    }
    if (writeKey === undefined || !(await options.sourceForWriteKey(writeKey))) {
      sendCompatError(res, new CompatError(404, "not_found", "no source has this write key"));
      return true;
    }
    // Cached briefly, as Segment's CDN does: a changed source shows within a minute.
    sendAsset(req, res, textAsset(JSON.stringify(analyticsSettings(writeKey, origin)), "public, max-age=60"), "application/json");
    return true;
  };
}

/** The write key from the path; a malformed escape is no key (a 404, never a 500). */
function decodedKey(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}
