import { BlockList, isIP } from "node:net";

export interface AddressGuardOptions {
  /** Allow every address (WAYPOST_ALLOW_PRIVATE_DESTINATIONS=true). */
  allowPrivate: boolean;
  /** CIDR ranges allowed although private. */
  allowedCidrs: readonly string[];
}

/** Ranges a webhook must not reach unless the operator allows it. */
const privateRanges: Array<[string, number, "ipv4" | "ipv6"]> = [
  ["0.0.0.0", 8, "ipv4"], // "this network"
  ["10.0.0.0", 8, "ipv4"],
  ["100.64.0.0", 10, "ipv4"], // carrier-grade NAT
  ["127.0.0.0", 8, "ipv4"], // loopback
  ["169.254.0.0", 16, "ipv4"], // link-local, cloud metadata
  ["172.16.0.0", 12, "ipv4"],
  ["192.0.0.0", 24, "ipv4"],
  ["192.168.0.0", 16, "ipv4"],
  ["198.18.0.0", 15, "ipv4"], // benchmarking
  ["224.0.0.0", 4, "ipv4"], // multicast
  ["240.0.0.0", 4, "ipv4"], // reserved, broadcast
  ["::", 128, "ipv6"],
  ["::1", 128, "ipv6"],
  ["fc00::", 7, "ipv6"], // unique local, includes fd00:ec2::254 metadata
  ["fe80::", 10, "ipv6"], // link-local
  ["ff00::", 8, "ipv6"], // multicast
];

export interface AddressGuard {
  /** Why the address may not be contacted, or undefined when it may. */
  refuse(address: string): string | undefined;
}

/**
 * The SSRF check. It runs on resolved addresses (see http-client.ts), so a
 * public name that resolves to a private address is caught too.
 */
export function createAddressGuard(options: AddressGuardOptions): AddressGuard {
  const blocked = new BlockList();
  for (const [network, prefix, family] of privateRanges) blocked.addSubnet(network, prefix, family);
  const allowed = new BlockList();
  for (const cidr of options.allowedCidrs) {
    const [network, prefix] = cidr.split("/");
    allowed.addSubnet(network!, Number(prefix), isIP(network!) === 6 ? "ipv6" : "ipv4");
  }
  return {
    refuse(address) {
      if (options.allowPrivate) return undefined;
      const plain = unmapIpv4(address);
      const family = isIP(plain) === 6 ? "ipv6" : "ipv4";
      if (isIP(plain) === 0) return `${address} is not an IP address`;
      if (!blocked.check(plain, family) || allowed.check(plain, family)) return undefined;
      return `address ${address} is private, loopback or link-local; allow it with WAYPOST_ALLOW_PRIVATE_DESTINATIONS`;
    },
  };
}

/** ::ffff:127.0.0.1 reaches 127.0.0.1: judge it as that. */
function unmapIpv4(address: string): string {
  const match = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return match ? match[1]! : address;
}
