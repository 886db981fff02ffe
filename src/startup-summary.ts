import type { Config, OutboundConfig } from "./config.js";

/**
 * The fields of the start-up line: the settings that change what the
 * service accepts and where it sends (so a wrong one shows in the first
 * line of the log, not in a failed delivery later), and where the console is.
 * No secret is among them.
 */
export function startupSummary(config: Config, url: string): Record<string, unknown> {
  const delivery = config.delivery;
  const delivers = config.role !== "api";
  const serves = config.role !== "worker";
  return {
    url,
    role: config.role,
    ...(serves ? { consoleUrl: `${url}/console/`, corsOrigins: config.corsOrigins ?? "*" } : {}),
    // Checked when destinations are saved (api) and before each request (worker): true, false, or the CIDR ranges allowed even so.
    privateDestinations: delivery.allowPrivateDestinations ? true : delivery.allowedCidrs.length > 0 ? delivery.allowedCidrs : false,
    ...(delivers ? { concurrency: delivery.concurrency, perDestinationConcurrency: delivery.perDestinationConcurrency } : {}),
    ...(delivers ? proxySummary(config.outbound) : {}),
    retentionDays: config.retentionMs / (24 * 60 * 60_000),
    database: config.databaseUrl ? "DATABASE_URL" : `embedded in ${config.dataDir}`,
    // Where spans go (credentials left out), or false: trace context is only passed through.
    traces: config.tracing.tracesUrl ? withoutCredentials(config.tracing.tracesUrl) : false,
  };
}

function withoutCredentials(href: string): string {
  const url = new URL(href);
  url.username = "";
  url.password = "";
  return url.href;
}

/** The proxies outbound HTTP goes through (credentials left out), and the hosts that go direct; nothing when there is none. */
function proxySummary(outbound: OutboundConfig): Record<string, unknown> {
  if (!outbound.httpsProxy && !outbound.httpProxy) return {};
  return {
    proxy: {
      https: outbound.httpsProxy ? withoutCredentials(outbound.httpsProxy) : false,
      http: outbound.httpProxy ? withoutCredentials(outbound.httpProxy) : false,
      noProxy: outbound.noProxy.map((entry) => (entry.port ? `${entry.host}:${entry.port}` : entry.host)),
    },
  };
}
