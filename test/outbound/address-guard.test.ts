import { expect, test } from "vitest";
import { createAddressGuard } from "../../src/outbound/address-guard.js";

test("loopback, private, link-local and metadata addresses are refused", () => {
  const guard = createAddressGuard({ allowPrivate: false, allowedCidrs: [] });
  for (const address of [
    "127.0.0.1",
    "10.1.2.3",
    "172.16.0.1",
    "192.168.1.1",
    "169.254.169.254",
    "::1",
    "fe80::1",
    "fd00:ec2::254",
    "::ffff:127.0.0.1",
    "0.0.0.0",
    "100.64.0.1",
  ]) {
    expect(guard.refuse(address), address).toMatch(/WAYPOST_ALLOW_PRIVATE_DESTINATIONS/);
  }
  for (const address of ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111"]) {
    expect(guard.refuse(address), address).toBeUndefined();
  }
});

test("the operator may allow everything, or CIDR ranges", () => {
  expect(createAddressGuard({ allowPrivate: true, allowedCidrs: [] }).refuse("127.0.0.1")).toBeUndefined();
  const ranged = createAddressGuard({ allowPrivate: false, allowedCidrs: ["10.0.0.0/8"] });
  expect(ranged.refuse("10.9.9.9")).toBeUndefined();
  expect(ranged.refuse("192.168.1.1")).toMatch(/address 192\.168\.1\.1 is private.*WAYPOST_ALLOW_PRIVATE_DESTINATIONS/);
});
