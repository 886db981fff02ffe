/** What a masked header value reads. Plain ASCII, so it survives terminals, logs and grep. */
export const maskedValue = "[masked]";

/**
 * Header names whose values are secrets: signatures (derived from the shared
 * secret: with the body, they would let a reader test guesses of it) and
 * static headers that look like credentials.
 */
const secretName = /authorization|cookie|token|secret|key|password|passwd|signature|credential|session|auth/i;

export function isSecretHeader(name: string): boolean {
  return secretName.test(name);
}

export function maskHeaders(headers: Readonly<Record<string, string>>): Record<string, string> {
  const masked: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) masked[name] = isSecretHeader(name) ? maskedValue : value;
  return masked;
}
