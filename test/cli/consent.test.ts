import { expect } from "vitest";
import { testWith } from "../helpers/fixtures.js";
import { cliEnv, waypost, waypostJson } from "./support.js";

/** Consent through `waypost`: --consent-category and --require-consent, `destinations show`, `messages filtered --reason consent`. */
let env: NodeJS.ProcessEnv;

const test = testWith();
test.beforeAll(async ({ server }) => {
  env = cliEnv(server);
});

test("--consent-category (repeatable) and --require-consent on create and update; shown by destinations get", async ({
  server,
  receiver,
}) => {
  const source = await server.createSource("cli consent");
  const created = await waypostJson<{ destination: { id: string } }>(
    [
      "destinations",
      "create",
      "--name",
      "ads",
      "--source",
      source.id,
      "--url",
      receiver.url,
      "--consent-category",
      "Advertising",
      "--consent-category",
      "Analytics",
      "--require-consent",
    ],
    env,
  );
  const id = created.destination.id;
  expect((await server.destinations.getDestination({ id })).destination).toMatchObject({
    consentCategories: ["Advertising", "Analytics"],
    requireConsent: true,
  });
  const shown = await waypost(["destinations", "get", id], env);
  expect(shown.stdout).toMatch(/consent categories:\s+Advertising, Analytics/);
  expect(shown.stdout).toMatch(/require consent:\s+yes/);

  // Update: --consent-category replaces the list; --no-require-consent turns it off; other flags leave both alone.
  expect((await waypost(["destinations", "update", id, "--consent-category", "Functional", "--no-require-consent"], env)).code).toBe(0);
  expect((await server.destinations.getDestination({ id })).destination).toMatchObject({
    consentCategories: ["Functional"],
    requireConsent: false,
  });
  expect((await waypost(["destinations", "update", id, "--name", "ads 2"], env)).code).toBe(0);
  expect((await server.destinations.getDestination({ id })).destination).toMatchObject({ consentCategories: ["Functional"] });
  expect((await waypost(["destinations", "update", id, "--consent-category", ""], env)).code).toBe(0);
  const cleared = await waypost(["destinations", "get", id], env);
  expect(cleared.stdout).toMatch(/consent categories:\s+none/);
  expect(cleared.stdout).toMatch(/require consent:\s+no/);

  const bad = await waypost(["destinations", "update", id, "--consent-category", "x".repeat(101)], env);
  expect(bad.code).toBe(1);
  expect(bad.stderr).toContain("invalid_argument: destination.consentCategories[0]: is longer than 100 characters");
});

test("messages filtered --reason consent lists the calls consent held back", async ({ server, receiver }) => {
  const source = await server.createSource("cli consent fates");
  const destination = await server.createDestination({
    name: "consenting",
    sourceIds: [source.id],
    webhooks: [{ url: receiver.url }],
    requireConsent: true,
  });
  const tracking = server.tracking(source.writeKey);
  const { messageId } = await tracking.track({ track: { userId: "u", event: "No preferences" } });
  const listed = await waypost(["messages", "filtered", "--destination", destination.id, "--reason", "consent"], env);
  expect(listed.code).toBe(0);
  expect(listed.stdout).toContain(messageId);
  expect(listed.stdout).toContain("filtered (consent)");
  const none = await waypost(["messages", "filtered", "--destination", destination.id, "--reason", "subscriptions"], env);
  expect(none.stdout).not.toContain(messageId);
});
