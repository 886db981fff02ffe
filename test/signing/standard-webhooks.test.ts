import { randomBytes } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { afterEach, expect, test, vi } from "vitest";
import { rotateSigningSecrets, validateSigningSecrets } from "../../src/delivery/kinds/webhook/signing-secrets.js";
import {
  activeSigningSecrets,
  generateSigningSecret,
  signingKey,
  signingSecretProblem,
  standardWebhookHeaders,
} from "../../src/signing/standard-webhooks.js";

afterEach(() => {
  vi.restoreAllMocks();
});

test("secrets: whsec_ and standard base64 of 24 to 64 bytes", () => {
  expect(signingSecretProblem(generateSigningSecret())).toBeUndefined();
  expect(signingSecretProblem(`whsec_${randomBytes(24).toString("base64")}`)).toBeUndefined();
  expect(signingSecretProblem(`whsec_${randomBytes(64).toString("base64")}`)).toBeUndefined();
  expect(signingSecretProblem(`whsec_${randomBytes(23).toString("base64")}`)).toMatch(/24 to 64 bytes, got 23/);
  expect(signingSecretProblem(`whsec_${randomBytes(65).toString("base64")}`)).toMatch(/got 65/);
  expect(signingSecretProblem(randomBytes(32).toString("base64"))).toMatch(/whsec_/);
  expect(signingSecretProblem(`whsec_${randomBytes(32).toString("base64url")}!`)).toMatch(/base64/);
});

test("the reference verifier accepts every secret's signature, and refuses an old timestamp", () => {
  const secrets = [generateSigningSecret(), generateSigningSecret()];
  const body = JSON.stringify({ type: "track", event: "Ünïcode ✓", messageId: "m-1" });
  const now = new Date();
  const headers = standardWebhookHeaders(secrets.map(signingKey), "m-1", now, body);
  expect(headers["webhook-signature"].split(" ")).toHaveLength(2);
  for (const secret of secrets) expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
  expect(() => new Webhook(generateSigningSecret()).verify(body, headers)).toThrow(/No matching signature/);
  expect(() => new Webhook(secrets[0]!).verify(`${body} `, headers)).toThrow(/No matching signature/);
  const replayed = standardWebhookHeaders(secrets.map(signingKey), "m-1", new Date(now.getTime() - 10 * 60_000), body);
  expect(() => new Webhook(secrets[0]!).verify(body, replayed)).toThrow(/too old/);
});

test("rotation keeps the previous secret for the overlap only", () => {
  const [first] = validateSigningSecrets("signingSecrets", [generateSigningSecret()]);
  const now = new Date("2026-11-22T10:00:00Z");
  const { secrets, secret } = rotateSigningSecrets([first!], now, 3_600_000);
  expect(secrets.map((s) => s.secret)).toEqual([first!.secret, secret]);
  expect(activeSigningSecrets(secrets, new Date(now.getTime() + 3_599_999))).toHaveLength(2);
  expect(activeSigningSecrets(secrets, new Date(now.getTime() + 3_600_000)).map((s) => s.secret)).toEqual([secret]);
  // A second rotation within the overlap keeps the first secret's earlier expiry.
  const again = rotateSigningSecrets(secrets, new Date(now.getTime() + 60_000), 3_600_000);
  expect(again.secrets[0]).toEqual({ secret: first!.secret, expiresAt: "2026-11-22T11:00:00.000Z" });
  expect(again.secrets[1]).toEqual({ secret, expiresAt: "2026-11-22T11:01:00.000Z" });
  expect(() => validateSigningSecrets("signingSecrets", ["whsec_short"])).toThrow(/signingSecrets\[0\]/);
});
