import { toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import type { Command } from "commander";
import {
  GetIntegrationResponseSchema,
  type IntegrationField,
  IntegrationService,
  ListIntegrationsResponseSchema,
} from "../../../gen/waypost/v1/integration_pb.js";
import type { Wire } from "../context.js";
import { fields, table } from "../format.js";

/** A setting as `integrations show` lists it: "apiSecret (password, required, secret): Secret Key". */
function fieldLine(field: IntegrationField): string {
  const traits = [field.type, field.required ? "required" : "", field.secret ? "secret" : "", field.multiple ? "many" : ""].filter(Boolean);
  const choices = field.choices.length ? `; one of ${field.choices.map((c) => JSON.stringify(c)).join(", ")}` : "";
  const byDefault = field.default ? `; default ${JSON.stringify(toJson(ValueSchema, field.default))}` : "";
  return `${field.key} (${traits.join(", ")}): ${field.label}${choices}${byDefault}`;
}

export function registerIntegrations(program: Command, wire: Wire): void {
  const integrations = program.command("integrations").description("the vendor tools an integration destination can send to");

  integrations
    .command("list")
    .description("list the catalog entries Waypost offers, by name")
    .option("--search <text>", "only entries whose name or slug contains it (any case)")
    .action(
      wire(async (ctx, options: { search?: string }) => {
        const response = await ctx.admin(IntegrationService).listIntegrations({ query: options.search ?? "" }, { signal: ctx.signal });
        ctx.print(ListIntegrationsResponseSchema, response, () =>
          table(
            ["SLUG", "NAME", "ACTIONS", "BATCH"],
            response.integrations.map((i) => [i.slug, i.name, String(i.actionCount), String(i.batchActionCount)]),
          ),
        );
      }),
    );

  integrations
    .command("show")
    .description("an entry's settings, actions and presets (what destinations create --integration takes)")
    .argument("<slug>", "the entry: mixpanel, amplitude, slack, ...")
    .action(
      wire(async (ctx, slug: string) => {
        const response = await ctx.admin(IntegrationService).getIntegration({ slug }, { signal: ctx.signal });
        const integration = response.integration!;
        ctx.print(GetIntegrationResponseSchema, response, () => {
          const head = fields([
            ["slug", integration.slug],
            ["name", integration.name],
            ...(integration.description ? [["description", integration.description] as const] : []),
          ]);
          const settings = integration.settings.length ? integration.settings.map((f) => `  --setting ${fieldLine(f)}`) : ["  none"];
          const actions = integration.actions.flatMap((a) => [
            `  ${a.slug}: ${a.title}${a.hasBatch ? " (batches)" : ""}${a.defaultSubscription ? `; suggests ${a.defaultSubscription}` : ""}`,
            ...a.fields.map((f) => `    ${fieldLine(f)}`),
          ]);
          const presets = integration.presets.length
            ? integration.presets.map((p) => `  ${p.name}: ${p.action} when ${p.subscribe}`)
            : ["  none (give --subscriptions-file)"];
          return `${head}\nsettings:\n${settings.join("\n")}\n\nactions:\n${actions.join("\n")}\n\npresets:\n${presets.join("\n")}\n`;
        });
      }),
    );
}
