import { expect, test } from "vitest";
import { InvalidInputError } from "../../../src/errors.js";
import { amqpSettingsView, validateAmqpSettings } from "../../../src/delivery/kinds/amqp/amqp-settings.js";
import { createAddressGuard } from "../../../src/outbound/address-guard.js";

const strict = createAddressGuard({ allowPrivate: false, allowedCidrs: [] });
const field = "destination.amqp";

function problem(input: Parameters<typeof validateAmqpSettings>[1], stored?: Parameters<typeof validateAmqpSettings>[3]): string {
  try {
    validateAmqpSettings(field, input, strict, stored);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidInputError);
    return (error as Error).message;
  }
  throw new Error("accepted");
}

test("the defaults: the default exchange, routing key {type}, mandatory", () => {
  expect(validateAmqpSettings(field, { url: "amqps://u:p@broker.example.com/prod" }, strict)).toEqual({
    url: "amqps://u:p@broker.example.com/prod",
    exchange: "",
    routingKey: "{type}",
    mandatory: true,
  });
  expect(
    validateAmqpSettings(
      field,
      { url: "amqp://broker.example.com", exchange: "events", routingKey: "{type}.{event}", mandatory: false },
      strict,
    ),
  ).toEqual({ url: "amqp://broker.example.com", exchange: "events", routingKey: "{type}.{event}", mandatory: false });
});

test("the URL: required, amqp or amqps, a host the guard allows; the password never echoed", () => {
  expect(problem({ url: "" })).toBe("destination.amqp.url: is required");
  expect(problem({ url: "http://broker.example.com" })).toBe('destination.amqp.url: must use amqp or amqps, got "http"');
  expect(problem({ url: "amqp://u:s3cret@" })).not.toContain("s3cret");
  expect(problem({ url: "not a url s3cret" })).toBe("destination.amqp.url: is not an absolute URL (amqp://user:password@host:port/vhost)");
  expect(problem({ url: "amqp://guest:guest@127.0.0.1:5672" })).toMatch(
    /^destination\.amqp\.url: address 127\.0\.0\.1 is private.*WAYPOST_ALLOW_PRIVATE_DESTINATIONS/,
  );
  expect(problem({ url: "amqp://localhost" })).toMatch(/^destination\.amqp\.url: host localhost is loopback/);
  expect(problem({ url: "amqp://[::1]:5672" })).toMatch(/^destination\.amqp\.url: address ::1 is private/);
  const allowing = createAddressGuard({ allowPrivate: true, allowedCidrs: [] });
  expect(validateAmqpSettings(field, { url: "amqp://guest:guest@127.0.0.1:5672" }, allowing).url).toBe("amqp://guest:guest@127.0.0.1:5672");
});

test("the exchange and routing key are checked, naming the field", () => {
  expect(problem({ url: "amqp://b.example.com", exchange: "a b" })).toBe(
    "destination.amqp.exchange: may hold only letters, digits, hyphen, underscore, period and colon",
  );
  expect(problem({ url: "amqp://b.example.com", exchange: "x".repeat(256) })).toBe("destination.amqp.exchange: is longer than 255 bytes");
  expect(problem({ url: "amqp://b.example.com", routingKey: "{type}.{user}" })).toMatch(
    /^destination\.amqp\.routingKey: unknown placeholder \{user\}/,
  );
  expect(problem({ url: "amqp://b.example.com", routingKey: "{type}..x" })).toMatch(/^destination\.amqp\.routingKey: .*empty token/);
  expect(problem({ url: "amqp://b.example.com", routingKey: "events.*" })).toMatch(/^destination\.amqp\.routingKey: .*wildcard/);
});

test("responses mask the password; the masked URL sent back keeps the stored one", () => {
  const stored = validateAmqpSettings(field, { url: "amqps://writer:p%40ss@broker.example.com:5671/prod", exchange: "events" }, strict);
  const view = amqpSettingsView(stored);
  expect(view).toEqual({
    url: "amqps://writer:***@broker.example.com:5671/prod",
    hasAmqpUrl: true,
    exchange: "events",
    routingKey: "{type}",
    mandatory: true,
  });
  expect(JSON.stringify(view)).not.toContain("p%40ss");
  // An update that edits what Get returned keeps the password it never saw.
  const updated = validateAmqpSettings(field, { url: view.url, exchange: "other" }, strict, stored);
  expect(updated.url).toBe("amqps://writer:p%40ss@broker.example.com:5671/prod");
  expect(updated.exchange).toBe("other");
  expect(validateAmqpSettings(field, { url: "" }, strict, stored).url).toBe(stored.url);
  // "***" with another host, or on a create, is never stored as the password.
  expect(problem({ url: "amqps://writer:***@elsewhere.example.com/prod" }, stored)).toMatch(
    /^destination\.amqp\.url: has the password "\*\*\*" but no stored URL/,
  );
  expect(problem({ url: "amqps://writer:***@broker.example.com:5671/prod" })).toMatch(/no stored URL/);
  // A URL without a password is shown as it is.
  expect(amqpSettingsView({ ...stored, url: "amqp://broker.example.com" }).url).toBe("amqp://broker.example.com");
});
