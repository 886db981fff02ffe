import type { KindFlags } from "../destination-flag-types.js";
import { settingsFlags } from "./settings-flags.js";

/** A Postgres warehouse: its URL and schema (an empty one on update keeps the stored one, the server's way). */
export const postgresFlags: KindFlags = {
  flags: [
    settingsFlags(
      "postgres",
      [
        {
          key: "url",
          flag: "--postgres-url <url>",
          help: { create: "the warehouse: postgres://user:password@host:5432/database (--kind postgres)", update: "a new warehouse URL" },
        },
        { key: "schema", flag: "--schema <name>", help: 'the warehouse schema its tables go in (default "waypost")' },
      ],
      "server",
    ),
  ],
  missing: (flags) => (flags.postgresUrl === undefined ? "--kind postgres needs --postgres-url" : undefined),
  target: (d) => (d.postgres ? `${d.postgres.url} (schema ${d.postgres.schema})` : ""),
  details: (d) => (d.postgres ? [["warehouse", d.postgres.url] as const, ["schema", d.postgres.schema] as const] : []),
};
