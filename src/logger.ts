import { pino, type Logger } from "pino";

export type { Logger };

/**
 * Structured JSON logs on stdout (pino: fast, and redaction is built in).
 * Secrets are never passed to the logger on purpose; the redact list is a
 * second line of defence for a field someone logs by mistake.
 */
export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  return pino(
    {
      name: "waypost",
      level,
      redact: {
        paths: [
          "writeKey",
          "*.writeKey",
          "adminToken",
          "sharedSecret",
          "*.sharedSecret",
          "signingSecret",
          "*.signingSecret",
          "signingSecrets",
          "*.signingSecrets",
          "authorization",
          "*.authorization",
          "headers.authorization",
        ],
        censor: "[redacted]",
      },
    },
    destination as never,
  );
}
