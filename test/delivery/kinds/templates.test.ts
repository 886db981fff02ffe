import { expect, test } from "vitest";
import { InvalidInputError } from "../../../src/errors.js";
import { parseTemplate, templateSnakeCase } from "../../../src/delivery/kinds/templates.js";

const rules = { maxLength: 255, forbidden: /\s/ };
const values = { type: "track", event: "Order Completed", sourceId: "s-1", destinationId: "d-1" };

function problem(source: string): string {
  try {
    parseTemplate("destination.nats.subject", source, rules);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidInputError);
    return (error as Error).message;
  }
  throw new Error(`${source} was accepted`);
}

test("every placeholder renders; literal text stays as written", () => {
  const template = parseTemplate("f", "waypost.{type}.{event}.{sourceId}.{destinationId}", rules);
  expect(template.render(values)).toBe("waypost.track.order_completed.s-1.d-1");
  expect(parseTemplate("f", "{type}", rules).render(values)).toBe("track");
  // A literal that spells a placeholder's name is still literal.
  expect(parseTemplate("f", "type.{event}type", rules).render(values)).toBe("type.order_completedtype");
  expect(parseTemplate("f", "a-{type}_x", rules).render({ ...values, type: "identify" })).toBe("a-identify_x");
});

test("{event} is snake_case: outside [a-z0-9_] becomes _, and an absent or empty event is _", () => {
  const template = parseTemplate("f", "{event}", rules);
  expect(template.render({ ...values, event: "orderCompleted" })).toBe("order_completed");
  expect(template.render({ ...values, event: "Ünïcode Event!" })).toBe("n_code_event");
  expect(template.render({ ...values, event: "a.b*c>d e" })).toBe("a_b_c_d_e");
  expect(template.render({ ...values, event: "" })).toBe("_");
  expect(template.render({ ...values, event: undefined })).toBe("_");
  expect(template.render({ ...values, event: "***" })).toBe("_");
  expect(templateSnakeCase("HTMLParser2Done")).toBe("html_parser2_done");
});

test("an unknown placeholder is refused, naming the field and the placeholders there are", () => {
  expect(problem("waypost.{userId}")).toBe(
    "destination.nats.subject: unknown placeholder {userId}: use {type}, {event}, {sourceId}, {destinationId}",
  );
  expect(problem("waypost.{}")).toMatch(/^destination\.nats\.subject: unknown placeholder \{\}/);
  expect(problem("waypost.{type")).toMatch(/unmatched \{ or \}/);
  expect(problem("waypost.type}")).toMatch(/unmatched \{ or \}/);
});

test("a template that can produce an empty token is refused", () => {
  for (const source of ["", ".", "waypost..{type}", ".{type}", "{type}.", "a.{type}..b"]) {
    expect(problem(source), source).toMatch(/^destination\.nats\.subject: .*can produce an empty token/);
  }
  // Each token holds text or a placeholder.
  expect(parseTemplate("f", "a.{type}.b", rules).render(values)).toBe("a.track.b");
  expect(parseTemplate("f", "{type}.{event}", rules).render(values)).toBe("track.order_completed");
});

test("a template with a wildcard is refused", () => {
  for (const source of ["waypost.*", "waypost.>", "waypost.{type}.*", "a*b.{type}", ">"]) {
    expect(problem(source), source).toMatch(/^destination\.nats\.subject: .*contains a wildcard \(\* or >\)/);
  }
});

test("characters the rules forbid, and overlong templates, are refused", () => {
  expect(problem("waypost {type}")).toMatch(/^destination\.nats\.subject: .*not allowed here/);
  expect(problem(`a.${"x".repeat(300)}`)).toBe("destination.nats.subject: is longer than 255 characters");
});
