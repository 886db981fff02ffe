import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Command } from "commander";
import { SourceKind, SourceService, UpdateSourceResponseSchema, type WebhookSourceSchema } from "../../../gen/waypost/v1/source_pb.js";
import type { Wire } from "../context.js";
import { UsageError } from "../errors.js";
import { fields } from "../format.js";
import { readFlagFile, verifierName, verifierNames } from "./hook-source-flags.js";
import { resolveSourceRef } from "./named-refs.js";

interface UpdateFlags {
  name?: string;
  verifier?: string;
  secretFile?: string;
  transformFile?: string;
  idempotencyKey?: string;
  maxRequestsPerSecond?: string;
}

type WebhookInit = MessageInitShape<typeof WebhookSourceSchema>;

/**
 * The webhook settings the flags change, with their update-mask paths: only
 * those given change, the others (the secret too) stay as stored.
 */
function webhookChanges(flags: UpdateFlags): { webhook: WebhookInit; paths: string[] } {
  const webhook: WebhookInit = {};
  const paths: string[] = [];
  if (flags.verifier !== undefined) {
    const verifier = verifierNames[flags.verifier.toLowerCase()];
    if (verifier === undefined) {
      throw new UsageError(`--verifier: unknown verifier "${flags.verifier}" (one of ${Object.keys(verifierNames).join(", ")})`);
    }
    webhook.verifier = verifier;
    paths.push("webhook.verifier");
  }
  if (flags.secretFile !== undefined) {
    // A secret file written by an editor or `echo` ends with a newline that is no part of the secret.
    webhook.secret = readFlagFile(flags.secretFile, "--secret-file").replace(/\r?\n$/, "");
    if (webhook.secret === "") throw new UsageError(`--secret-file: ${flags.secretFile} is empty`);
    paths.push("webhook.secret");
  }
  if (flags.transformFile !== undefined) {
    // An empty file goes back to the default mapping.
    webhook.transform = readFlagFile(flags.transformFile, "--transform-file");
    paths.push("webhook.transform");
  }
  if (flags.idempotencyKey !== undefined) {
    webhook.idempotencyKey = flags.idempotencyKey;
    paths.push("webhook.idempotency_key");
  }
  if (flags.maxRequestsPerSecond !== undefined) {
    if (!/^\d+$/.test(flags.maxRequestsPerSecond)) {
      throw new UsageError(`--max-requests-per-second: "${flags.maxRequestsPerSecond}" is not a whole number`);
    }
    webhook.maxRequestsPerSecond = Number(flags.maxRequestsPerSecond);
    paths.push("webhook.max_requests_per_second");
  }
  return { webhook, paths };
}

/** `sources update SOURCE --transform-file F ...`: changes what is given, keeps the rest. */
export function registerSourceUpdate(sources: Command, wire: Wire): void {
  sources
    .command("update")
    .description("change a source's name or a webhook source's settings; what is not given stays (the secret too)")
    .argument("<source>", "source id or name")
    .option("--name <name>", "a new name")
    .option("--verifier <name>", `how requests are verified: ${Object.keys(verifierNames).join(", ")}`)
    .option("--secret-file <file>", "the verifier's new secret, read from a file (its trailing newline dropped)")
    .option("--transform-file <file>", "JavaScript defining transform(request), returning the calls (an empty file: the default mapping)")
    .option("--idempotency-key <key>", "a header name or $.json.path that makes a resend a no-op (empty: the verifier's)")
    .option("--max-requests-per-second <n>", "requests accepted per second; over it 429 (0: no limit)")
    .action(
      wire(async (ctx, ref: string, flags: UpdateFlags) => {
        const { webhook, paths } = webhookChanges(flags);
        if (flags.name !== undefined) paths.unshift("name");
        if (paths.length === 0) {
          throw new UsageError(
            "nothing to change: give --name, --verifier, --secret-file, --transform-file, --idempotency-key or --max-requests-per-second",
          );
        }
        const id = await resolveSourceRef(ctx, ref);
        const response = await ctx.admin(SourceService).updateSource({
          source: { id, name: flags.name ?? "", ...(paths.some((p) => p.startsWith("webhook.")) ? { webhook } : {}) },
          updateMask: { paths },
        });
        const source = response.source!;
        ctx.print(UpdateSourceResponseSchema, response, () =>
          fields([
            ["id", source.id],
            ["name", source.name],
            ...(source.kind === SourceKind.WEBHOOK
              ? [
                  ["verifier", verifierName(source.webhook?.verifier ?? 0)] as const,
                  ["secret", source.webhook?.hasSecret ? "set" : "none"] as const,
                  [
                    "transform",
                    source.webhook?.transform ? `${source.webhook.transform.length} characters` : "the default mapping",
                  ] as const,
                ]
              : []),
          ]),
        );
      }),
    );
}
