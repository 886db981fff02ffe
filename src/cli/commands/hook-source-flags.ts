import { readFileSync } from "node:fs";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Command } from "commander";
import { HookVerifier, type WebhookSourceSchema } from "../../../gen/waypost/v1/source_pb.js";
import { UsageError } from "../errors.js";

/** --verifier's names, as the docs spell them. */
export const verifierNames: Record<string, HookVerifier> = {
  none: HookVerifier.NONE,
  "standard-webhooks": HookVerifier.STANDARD_WEBHOOKS,
  stripe: HookVerifier.STRIPE,
  github: HookVerifier.GITHUB,
  shopify: HookVerifier.SHOPIFY,
  hmac: HookVerifier.HMAC,
  basic: HookVerifier.BASIC,
  token: HookVerifier.TOKEN,
};

export function verifierName(verifier: HookVerifier): string {
  return Object.entries(verifierNames).find(([, v]) => v === verifier)?.[0] ?? "none";
}

export interface HookSourceFlags {
  webhook?: boolean;
  verifier?: string;
  secretFile?: string;
  transformFile?: string;
  idempotencyKey?: string;
  hmacHeader?: string;
  hmacAlgorithm?: string;
  hmacEncoding?: string;
  hmacPrefix?: string;
  tokenHeader?: string;
  maxRequestsPerSecond?: string;
}

/** The webhook flags of `sources create`. */
export function declareHookSourceFlags(command: Command): Command {
  return command
    .option("--webhook", "a webhook source: SaaS tools POST to its inbound URL (printed once)")
    .option("--verifier <name>", `how requests are verified: ${Object.keys(verifierNames).join(", ")} (default none)`)
    .option("--secret-file <file>", "the verifier's secret, read from a file (its trailing newline dropped)")
    .option("--transform-file <file>", "JavaScript defining transform(request), returning the calls (default: the default mapping)")
    .option("--idempotency-key <key>", "a header name or $.json.path that makes a resend a no-op (default: the verifier's)")
    .option("--hmac-header <name>", "with --verifier hmac: the signature's header")
    .option("--hmac-algorithm <name>", "with --verifier hmac: sha1, sha256 (default) or sha512")
    .option("--hmac-encoding <name>", "with --verifier hmac: hex (default) or base64")
    .option("--hmac-prefix <text>", 'with --verifier hmac: text before the signature ("sha256=")')
    .option("--token-header <name>", "with --verifier token: the header holding the secret (default Authorization: Bearer)")
    .option("--max-requests-per-second <n>", "requests accepted per second; over it 429 (default 0: no limit)");
}

const webhookOnly: ReadonlyArray<[keyof HookSourceFlags, string]> = [
  ["verifier", "--verifier"],
  ["secretFile", "--secret-file"],
  ["transformFile", "--transform-file"],
  ["idempotencyKey", "--idempotency-key"],
  ["hmacHeader", "--hmac-header"],
  ["hmacAlgorithm", "--hmac-algorithm"],
  ["hmacEncoding", "--hmac-encoding"],
  ["hmacPrefix", "--hmac-prefix"],
  ["tokenHeader", "--token-header"],
  ["maxRequestsPerSecond", "--max-requests-per-second"],
];

/**
 * The WebhookSource the flags describe, or undefined without --webhook. The
 * server validates the settings themselves (and names the field); this
 * checks only what the command line alone can tell: a flag without
 * --webhook, an unknown verifier, a file that cannot be read.
 */
export function webhookFromFlags(flags: HookSourceFlags): MessageInitShape<typeof WebhookSourceSchema> | undefined {
  if (!flags.webhook) {
    const stray = webhookOnly.find(([key]) => flags[key] !== undefined);
    if (stray) throw new UsageError(`${stray[1]}: only with --webhook`);
    return undefined;
  }
  const verifier = flags.verifier === undefined ? HookVerifier.NONE : verifierNames[flags.verifier.toLowerCase()];
  if (verifier === undefined) {
    throw new UsageError(`--verifier: unknown verifier "${flags.verifier}" (one of ${Object.keys(verifierNames).join(", ")})`);
  }
  const hmacFlags = [flags.hmacHeader, flags.hmacAlgorithm, flags.hmacEncoding, flags.hmacPrefix];
  if (verifier !== HookVerifier.HMAC && hmacFlags.some((f) => f !== undefined)) throw new UsageError("--hmac-*: only with --verifier hmac");
  if (verifier !== HookVerifier.TOKEN && flags.tokenHeader !== undefined)
    throw new UsageError("--token-header: only with --verifier token");
  let rate = 0;
  if (flags.maxRequestsPerSecond !== undefined) {
    if (!/^\d+$/.test(flags.maxRequestsPerSecond)) {
      throw new UsageError(`--max-requests-per-second: "${flags.maxRequestsPerSecond}" is not a whole number`);
    }
    rate = Number(flags.maxRequestsPerSecond);
  }
  return {
    verifier,
    // A secret file written by an editor or `echo` ends with a newline that is no part of the secret.
    secret: flags.secretFile === undefined ? "" : readFlagFile(flags.secretFile, "--secret-file").replace(/\r?\n$/, ""),
    transform: flags.transformFile === undefined ? "" : readFlagFile(flags.transformFile, "--transform-file"),
    idempotencyKey: flags.idempotencyKey ?? "",
    hmac:
      verifier === HookVerifier.HMAC
        ? {
            header: flags.hmacHeader ?? "",
            algorithm: flags.hmacAlgorithm ?? "",
            encoding: flags.hmacEncoding ?? "",
            prefix: flags.hmacPrefix ?? "",
          }
        : undefined,
    tokenHeader: flags.tokenHeader ?? "",
    maxRequestsPerSecond: rate,
  };
}

export function readFlagFile(file: string, flag: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch (error) {
    throw new UsageError(`${flag}: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
}

/** The inbound URL of a token, on the server the CLI talks to. */
export function inboundUrl(serverUrl: string, token: string): string {
  return `${serverUrl.replace(/(?<!\/)\/+$/, "")}/hooks/${token}`;
}
