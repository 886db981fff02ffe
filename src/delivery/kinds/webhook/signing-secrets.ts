import {
  activeSigningSecrets,
  generateSigningSecret,
  signingSecretProblem,
  type StoredSigningSecret,
} from "../../../signing/standard-webhooks.js";
import { InvalidInputError } from "../../../errors.js";

const invalidArgument = (field: string, problem: string) => new InvalidInputError(field, problem);

/** More would only make every request's signature header longer. */
export const maxSigningSecrets = 5;

/** Secrets given by the caller: each `whsec_` + base64 of 24 to 64 bytes; they sign until replaced. */
export function validateSigningSecrets(field: string, secrets: readonly string[]): StoredSigningSecret[] {
  if (secrets.length > maxSigningSecrets) {
    throw invalidArgument(field, `at most ${maxSigningSecrets} signing secrets are allowed, got ${secrets.length}`);
  }
  const unique = [...new Set(secrets)];
  return unique.map((secret, i) => {
    // The message names the rule, never the value: it may be a real secret.
    const problem = signingSecretProblem(secret);
    if (problem) throw invalidArgument(`${field}[${i}]`, problem);
    return { secret, expiresAt: null };
  });
}

/**
 * A new secret that signs from now on; the secrets signing until now keep
 * signing for `overlapMs` (an earlier expiry is kept), so receivers can
 * switch over without a failed verification. Expired secrets are dropped.
 */
export function rotateSigningSecrets(
  stored: readonly StoredSigningSecret[],
  now: Date,
  overlapMs: number,
): { secrets: StoredSigningSecret[]; secret: string } {
  const until = now.getTime() + overlapMs;
  const kept =
    overlapMs <= 0
      ? []
      : activeSigningSecrets(stored, now)
          .map((s) => ({
            secret: s.secret,
            expiresAt: s.expiresAt !== null && Date.parse(s.expiresAt) < until ? s.expiresAt : new Date(until).toISOString(),
          }))
          // The newest previous secrets, so a rotation never exceeds the limit.
          .slice(-(maxSigningSecrets - 1));
  const secret = generateSigningSecret();
  return { secrets: [...kept, { secret, expiresAt: null }], secret };
}

/** Whether any secret still signs at `now`. */
export function hasActiveSigningSecret(stored: readonly StoredSigningSecret[], now: Date): boolean {
  return activeSigningSecrets(stored, now).length > 0;
}
