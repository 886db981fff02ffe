import { settingsKind } from "./settings-kind.js";

/** A Postgres warehouse: its URL and schema (an empty one on update keeps the stored one, the server's way). */
export const postgresFlags = settingsKind({
  message: "postgres",
  keep: "server",
  address: {
    key: "url",
    flag: "--postgres-url <url>",
    help: { create: "the warehouse: postgres://user:password@host:5432/database (--kind postgres)", update: "a new warehouse URL" },
  },
  others: [{ key: "schema", flag: "--schema <name>", help: 'the warehouse schema its tables go in (default "waypost")' }],
  target: (postgres) => `${postgres.url} (schema ${postgres.schema})`,
  details: (postgres) => [
    ["warehouse", postgres.url],
    ["schema", postgres.schema],
  ],
});
