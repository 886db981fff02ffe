import tls from "node:tls";

const contexts = new Map<string, tls.SecureContext>();

/**
 * The TLS context of outbound requests when CAs beyond the defaults are
 * trusted: Node's default roots plus the extra ones. Giving a client `ca`
 * replaces the roots instead of adding to them (NODE_EXTRA_CA_CERTS's
 * certificates included, which Node adds to its default context only), so
 * the roots are listed here again. Undefined when there is nothing extra:
 * the client then uses Node's default context, which already holds
 * NODE_EXTRA_CA_CERTS when the process started with it.
 *
 * One context per set of CAs, built once: a `ca` list in the connect
 * options would be parsed again (over a hundred certificates) on every new
 * connection of every destination.
 */
export function trustedContext(ca: string | string[] | undefined, extraCaCerts: string | undefined): tls.SecureContext | undefined {
  const extra = [...[ca ?? []].flat(), ...(extraCaCerts ? [extraCaCerts] : [])];
  if (extra.length === 0) return undefined;
  const key = extra.join("\n");
  let context = contexts.get(key);
  if (!context) {
    context = tls.createSecureContext({ ca: [...defaultRoots(), ...extra] });
    // A process sees one or two sets (its config's, a test's); the bound is a guard only.
    if (contexts.size >= 16) contexts.clear();
    contexts.set(key, context);
  }
  return context;
}

/**
 * Node's default trust: getCACertificates("default") where it exists (Node
 * 22.15 and later: the bundled roots or the system's, per --use-system-ca,
 * with NODE_EXTRA_CA_CERTS), else the bundled roots.
 */
function defaultRoots(): readonly string[] {
  const get = (tls as { getCACertificates?: (type: string) => string[] }).getCACertificates;
  return typeof get === "function" ? get("default") : tls.rootCertificates;
}
