import { expect, test } from "vitest";
import { InvalidInputError } from "../../../src/errors.js";
import { natsSettingsView, validateNatsSettings } from "../../../src/delivery/kinds/nats/nats-settings.js";
import { createAddressGuard } from "../../../src/outbound/address-guard.js";

const strict = createAddressGuard({ allowPrivate: false, allowedCidrs: [] });
const field = "destination.nats";

function problem(input: Parameters<typeof validateNatsSettings>[1], stored?: Parameters<typeof validateNatsSettings>[3]): string {
  try {
    validateNatsSettings(field, input, strict, stored);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidInputError);
    return (error as Error).message;
  }
  throw new Error("accepted");
}

test("the defaults, and servers written back as scheme, host and port", () => {
  expect(validateNatsSettings(field, { servers: ["nats://n1.example.com:4222/", "nats://n2.example.com"] }, strict)).toEqual({
    servers: ["nats://n1.example.com:4222", "nats://n2.example.com"],
    subject: "waypost.{type}",
    token: "",
    user: "",
    password: "",
  });
});

test("servers: 1 to 5 nats:// or tls:// URLs, not mixed, no credentials, hosts the guard allows", () => {
  expect(problem({ servers: [] })).toBe("destination.nats.servers: at least one server is required");
  expect(problem({ servers: Array.from({ length: 6 }, (_, i) => `nats://n${i}.example.com`) })).toBe(
    "destination.nats.servers: at most 5 servers are allowed, got 6",
  );
  expect(problem({ servers: ["nats://n.example.com", "http://n.example.com"] })).toBe(
    'destination.nats.servers[1]: must use nats or tls, got "http"',
  );
  expect(problem({ servers: ["nats://n.example.com", "tls://m.example.com"] })).toMatch(
    /^destination\.nats\.servers: mixes nats:\/\/ and tls:\/\//,
  );
  expect(problem({ servers: ["nats://u:p@n.example.com"] })).toMatch(
    /^destination\.nats\.servers\[0\]: must not contain a user name or password/,
  );
  expect(problem({ servers: ["nats://n.example.com/path"] })).toBe("destination.nats.servers[0]: must be just scheme, host and port");
  expect(problem({ servers: ["nats://10.0.0.5:4222"] })).toMatch(/^destination\.nats\.servers\[0\]: address 10\.0\.0\.5 is private/);
});

test("the subject template is checked naming the field", () => {
  expect(problem({ servers: ["nats://n.example.com"], subject: "waypost.>" })).toMatch(/^destination\.nats\.subject: .*wildcard/);
  expect(problem({ servers: ["nats://n.example.com"], subject: "waypost.{type}." })).toMatch(/^destination\.nats\.subject: .*empty token/);
  expect(problem({ servers: ["nats://n.example.com"], subject: "waypost {type}" })).toMatch(/^destination\.nats\.subject: .*not allowed/);
  expect(problem({ servers: ["nats://n.example.com"], subject: "{nope}" })).toMatch(
    /^destination\.nats\.subject: unknown placeholder \{nope\}/,
  );
});

test("credentials: a password needs a user, a token excludes a user", () => {
  expect(problem({ servers: ["nats://n.example.com"], password: "p" })).toBe("destination.nats.password: is set without a user");
  expect(problem({ servers: ["nats://n.example.com"], token: "t", user: "u" })).toBe(
    "destination.nats.token: and a user are both set: use one or the other",
  );
  expect(problem({ servers: ["nats://n.example.com"], token: "a\nb" })).toBe("destination.nats.token: must not contain control characters");
});

test("credentials are write-only: masked in responses, and *** sent back keeps the stored value", () => {
  const stored = validateNatsSettings(field, { servers: ["tls://n.example.com:4222"], user: "writer", password: "s3cret" }, strict);
  const view = natsSettingsView(stored);
  expect(view).toEqual({
    servers: ["tls://n.example.com:4222"],
    subject: "waypost.{type}",
    user: "writer",
    token: "",
    password: "***",
    hasToken: false,
    hasPassword: true,
  });
  expect(JSON.stringify(view)).not.toContain("s3cret");
  const updated = validateNatsSettings(field, { ...view, subject: "events.{event}" }, strict, stored);
  expect(updated).toEqual({ ...stored, subject: "events.{event}" });
  expect(problem({ servers: ["nats://n.example.com"], token: "***" })).toBe(
    'destination.nats.token: is "***" but there is no stored value to keep: send the real value',
  );
});
