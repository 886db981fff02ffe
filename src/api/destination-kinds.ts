import { create } from "@bufbuild/protobuf";
import { type Destination, DestinationKind, type PostgresWarehouse, PostgresWarehouseSchema } from "../../gen/waypost/v1/destination_pb.js";
import type { DestinationKindName, PostgresSettings } from "../db/queries/destinations.js";
import { defaultWarehouseSchema, maskPostgresUrl, postgresUrlProblem, schemaProblem } from "../warehouse/settings.js";
import { invalidArgument } from "./errors.js";

/** The kind a create request asks for (unspecified: webhook). */
export function kindOf(input: Destination): DestinationKindName {
  switch (input.kind) {
    case DestinationKind.UNSPECIFIED:
    case DestinationKind.WEBHOOK:
      return "webhook";
    case DestinationKind.POSTGRES:
      return "postgres";
    default:
      throw invalidArgument("destination.kind", `unknown kind ${input.kind}; use DESTINATION_KIND_WEBHOOK or DESTINATION_KIND_POSTGRES`);
  }
}

export function kindToProto(kind: DestinationKindName): DestinationKind {
  return kind === "postgres" ? DestinationKind.POSTGRES : DestinationKind.WEBHOOK;
}

/**
 * A Postgres destination's settings from a request. On update, `current`
 * is what is stored: a URL sent back masked (as responses carry it) keeps
 * the stored one, so a form can round-trip it without knowing the password.
 */
export function validatePostgres(input: PostgresWarehouse | undefined, current?: PostgresSettings): PostgresSettings {
  const given = input?.url ?? "";
  const url = current && (given === "" || given === maskPostgresUrl(current.url)) ? current.url : given;
  const urlProblem = postgresUrlProblem(url);
  if (urlProblem) throw invalidArgument("destination.postgres.url", urlProblem);
  const schema = input?.schema || current?.schema || defaultWarehouseSchema;
  const problem = schemaProblem(schema);
  if (problem) throw invalidArgument("destination.postgres.schema", problem);
  return { url, schema };
}

/** Settings only webhook destinations have, refused on a Postgres one (naming the field). */
export function refuseWebhookSettings(input: Destination, generateSigningSecret: boolean) {
  if (input.webhooks.length > 0) throw invalidArgument("destination.webhooks", "a Postgres destination has no webhooks");
  if (input.sharedSecret !== "") throw invalidArgument("destination.sharedSecret", "a Postgres destination has no shared secret");
  if (input.signingSecrets.length > 0 || generateSigningSecret) {
    throw invalidArgument("destination.signingSecrets", "a Postgres destination has no signing secrets");
  }
}

/** The warehouse as responses show it: the password masked, and whether a URL is stored. */
export function postgresToProto(settings: PostgresSettings | null): PostgresWarehouse | undefined {
  if (!settings) return undefined;
  return create(PostgresWarehouseSchema, {
    url: maskPostgresUrl(settings.url),
    schema: settings.schema,
    hasPostgresUrl: settings.url !== "",
  });
}
