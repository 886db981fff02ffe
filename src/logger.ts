import { pino, stdSerializers, type Logger } from "pino";

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
      serializers: { err: serializeError },
    },
    destination as never,
  );
}

/**
 * pino's error serializer with the pg client left out: pg-pool attaches the
 * client to an idle connection's error (`err.client`), and logged whole it
 * is kilobytes of socket, parser and connection state that tell a reader
 * nothing the error's own fields do not. The code, message and stack stay.
 */
function serializeError(error: unknown): unknown {
  const serialized = stdSerializers.err(error as Error) as unknown;
  if (serialized && typeof serialized === "object" && "client" in serialized) {
    const { client: _client, ...rest } = serialized as Record<string, unknown>;
    return rest;
  }
  return serialized;
}
