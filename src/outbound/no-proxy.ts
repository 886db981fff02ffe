import { BlockList, isIP } from "node:net";
import type { NoProxyEntry } from "../config.js";

/** Whether a request to host:port goes direct although a proxy is set. */
export type NoProxyMatcher = (hostname: string, port: number) => boolean;

/**
 * NO_PROXY's matching, as curl and Node (undici's EnvHttpProxyAgent) do it:
 * "*" matches every host; an entry matches its own host and every
 * subdomain (example.com and .example.com both match api.example.com); an
 * entry with a port matches that port only. An entry written as a CIDR
 * range (10.0.0.0/8, as curl takes it) matches the literal addresses in it.
 * Names are compared as written, never resolved: a name that resolves into
 * a listed range still goes through the proxy.
 */
export function createNoProxyMatcher(entries: readonly NoProxyEntry[]): NoProxyMatcher {
  if (entries.some((entry) => entry.host === "*")) return () => true;
  if (entries.length === 0) return () => false;
  const ranges: Array<{ list: BlockList; port: number }> = [];
  const names: NoProxyEntry[] = [];
  for (const entry of entries) {
    const [network, prefix] = entry.host.split("/");
    const family = isIP(network ?? "");
    if (prefix !== undefined && family !== 0) {
      const list = new BlockList();
      list.addSubnet(network!, Number(prefix), family === 6 ? "ipv6" : "ipv4");
      ranges.push({ list, port: entry.port });
    } else {
      names.push(entry);
    }
  }
  return (hostname, port) => {
    const host = hostname.replace(/^\[(.*)\]$/, "$1").toLowerCase();
    for (const entry of names) {
      if (entry.port !== 0 && entry.port !== port) continue;
      if (host === entry.host || host.endsWith(`.${entry.host}`)) return true;
    }
    const family = isIP(host);
    if (family === 0) return false;
    for (const range of ranges) {
      if (range.port !== 0 && range.port !== port) continue;
      if (range.list.check(host, family === 6 ? "ipv6" : "ipv4")) return true;
    }
    return false;
  };
}
