import type pg from "pg";
import { InvalidInputError } from "../../../errors.js";
import { cachedIdentity, checkWarehouse, type DatabaseIdentity } from "../../../warehouse/ownership.js";
import { defaultWarehouseSchema, maskPostgresUrl, postgresUrlProblem, schemaProblem } from "../../../warehouse/settings.js";
import type { KindSettings } from "../kind.js";

/** A Postgres warehouse destination's settings (the URL includes its password: never returned or logged). */
export interface PostgresSettings {
  url: string;
  schema: string;
}

/** How long the save-time look at a warehouse may take. */
const checkTimeoutMs = 5_000;
const identities = new WeakMap<pg.Pool, () => Promise<DatabaseIdentity>>();

export const postgresSettings: KindSettings<PostgresSettings> = {
  fields: [
    { path: "postgres", name: "postgres", describe: "warehouse settings", moves: true, given: (input) => input.postgres !== undefined },
  ],
  /**
   * On update, `current` is what is stored: a URL sent back masked (as
   * responses carry it) keeps the stored one, so a form can round-trip it
   * without knowing the password.
   */
  read(input, { paths, current }) {
    if (current && !paths.has("postgres")) return current;
    const given = input.postgres?.url ?? "";
    const url = current && (given === "" || given === maskPostgresUrl(current.url)) ? current.url : given;
    const urlProblem = postgresUrlProblem(url);
    if (urlProblem) throw new InvalidInputError("destination.postgres.url", urlProblem);
    const schema = input.postgres?.schema || current?.schema || defaultWarehouseSchema;
    const problem = schemaProblem(schema);
    if (problem) throw new InvalidInputError("destination.postgres.schema", problem);
    return { url, schema };
  },
  /**
   * Refuses a warehouse that is Waypost's own database or a schema holding
   * tables Waypost did not make (one short connection), when it is new or
   * moved. A warehouse that does not answer is accepted: it may come up
   * later, and the loader checks it is not Waypost's own database before it
   * loads anything.
   */
  async check(settings, current, pool) {
    if (current && current.url === settings.url && current.schema === settings.schema) return;
    let own = identities.get(pool);
    if (!own) identities.set(pool, (own = cachedIdentity(pool)));
    const check = await checkWarehouse(settings.url, settings.schema, await own(), checkTimeoutMs);
    if (check.ok === false) throw new InvalidInputError(`destination.postgres.${check.field}`, check.reason);
  },
  toProto: (settings) => ({
    postgres: { url: maskPostgresUrl(settings.url), schema: settings.schema, hasPostgresUrl: settings.url !== "" },
  }),
  toRow: (settings) => ({ postgres: settings }),
  // A row without warehouse settings (none is stored so) reads as an empty URL: loads fail naming it.
  fromRow: (row) => row.postgres ?? { url: "", schema: defaultWarehouseSchema },
};
