import { type ColumnType, inferType } from "./column-types.js";
import { flatten, isPlainObject } from "./flatten.js";
import { fitIdentifier, warehouseName } from "./identifiers.js";

/** One value for one column, with the type a new column for it gets. */
export interface Cell {
  value: unknown;
  type: ColumnType;
}

/** One row a call puts into one table. */
export interface TableRow {
  table: string;
  cells: Map<string, Cell>;
}

/** What one call does to a warehouse: rows to insert (and a `users` row to merge), or a user's rows to delete. */
export type WarehouseChange =
  | { kind: "rows"; id: string; rows: TableRow[]; user: TableRow | undefined }
  | { kind: "delete"; userId: string };

/** The tables of the layout itself; an event with one of these names gets its table with a leading `_`. */
export const layoutTables = ["identifies", "tracks", "pages", "screens", "groups", "aliases", "users"] as const;

/** The columns every call table has, with their types (created with the table). */
export const commonColumns: ReadonlyMap<string, ColumnType> = new Map<string, ColumnType>([
  ["id", "text"],
  ["received_at", "timestamptz"],
  ["sent_at", "timestamptz"],
  ["timestamp", "timestamptz"],
  ["original_timestamp", "timestamptz"],
  ["user_id", "text"],
  ["anonymous_id", "text"],
]);

/** Columns some tables have besides the common ones. */
const typeColumns: Record<string, ReadonlyArray<[string, ColumnType]>> = {
  tracks: [
    ["event", "text"],
    ["event_text", "text"],
  ],
  pages: [
    ["name", "text"],
    ["category", "text"],
  ],
  screens: [["name", "text"]],
  groups: [["group_id", "text"]],
  aliases: [["previous_id", "text"]],
};

/** The fixed columns of a table: what its CREATE TABLE has (shared: never changed). */
export function fixedColumns(table: string, isEventTable: boolean): ReadonlyMap<string, ColumnType> {
  const key = table === "users" ? "users" : isEventTable ? "tracks" : table;
  let columns = fixedByKind.get(key);
  if (!columns) {
    const users: Array<[string, ColumnType]> = [
      ["id", "text"],
      ["received_at", "timestamptz"],
    ];
    columns = new Map(key === "users" ? users : [...commonColumns, ...(typeColumns[key] ?? [])]);
    fixedByKind.set(key, columns);
  }
  return columns;
}

const fixedByKind = new Map<string, ReadonlyMap<string, ColumnType>>();

/** The table of a track event: its name in snake_case, `_`-prefixed when it is one of the layout's own. */
export function eventTable(event: string): string {
  const name = warehouseName(event);
  return (layoutTables as readonly string[]).includes(name) ? fitIdentifier(`_${name}`) : name;
}

type Body = Record<string, unknown>;

const str = (value: unknown): string | undefined => (typeof value === "string" && value !== "" ? value : undefined);

/**
 * What a call (its webhook body, as stored) puts into the warehouse. The
 * layout is the analytics-warehouse one: a table per call type, a table per
 * track event holding its properties, `users` with merged traits; context
 * flattened with a `context_` prefix, properties and traits without one.
 */
export function changeOf(body: Body, receivedAt: Date | undefined): WarehouseChange {
  const type = body.type;
  if (type === "delete") {
    const userId = str(body.userId);
    if (!userId) throw new Error("delete notification without userId");
    return { kind: "delete", userId };
  }
  const id = str(body.messageId);
  if (!id) throw new Error("call without messageId");
  const common = commonCells(body, receivedAt);
  const row = (table: string, extra: Array<[string, unknown]>, fields?: unknown, isEventTable = false): TableRow => {
    const cells = new Map(common);
    for (const [name, value] of extra) if (value !== undefined) cells.set(name, { value, type: "text" });
    addFields(cells, fields, fixedColumns(table, isEventTable));
    return { table, cells };
  };
  switch (type) {
    case "track": {
      const event = str(body.event) ?? "";
      const named: Array<[string, unknown]> = [
        ["event", warehouseName(event)],
        ["event_text", event],
      ];
      return { kind: "rows", id, rows: [row("tracks", named), row(eventTable(event), named, body.properties, true)], user: undefined };
    }
    case "identify":
      return { kind: "rows", id, rows: [row("identifies", [], body.traits)], user: userRow(body, receivedAt) };
    case "page":
      return {
        kind: "rows",
        id,
        rows: [
          row(
            "pages",
            [
              ["name", str(body.name)],
              ["category", str(body.category)],
            ],
            body.properties,
          ),
        ],
        user: undefined,
      };
    case "screen":
      return { kind: "rows", id, rows: [row("screens", [["name", str(body.name)]], body.properties)], user: undefined };
    case "group":
      return { kind: "rows", id, rows: [row("groups", [["group_id", str(body.groupId)]], body.traits)], user: undefined };
    case "alias":
      return { kind: "rows", id, rows: [row("aliases", [["previous_id", str(body["Previous ID"])]])], user: undefined };
    default:
      throw new Error(`unknown call type ${JSON.stringify(type)}`);
  }
}

function commonCells(body: Body, receivedAt: Date | undefined): Map<string, Cell> {
  const cells = new Map<string, Cell>();
  const set = (name: string, value: unknown, type: ColumnType) => {
    if (value !== undefined) cells.set(name, { value, type });
  };
  set("id", str(body.messageId), "text");
  set("received_at", receivedAt?.toISOString(), "timestamptz");
  set("timestamp", str(body.timestamp), "timestamptz");
  set("original_timestamp", str(body.timestamp), "timestamptz");
  // Alias writes its ids with spaces (the webhook body's shape).
  set("user_id", str(body.userId) ?? str(body["User ID"]), "text");
  set("anonymous_id", str(body.anonymousId), "text");
  for (const [name, value] of flatten(body.context, "context")) cells.set(name, { value, type: inferType(value) });
  return cells;
}

/** Adds properties or traits as columns; a name taken by a fixed column gets a leading `_`. */
function addFields(cells: Map<string, Cell>, fields: unknown, fixed: ReadonlyMap<string, ColumnType>) {
  if (!isPlainObject(fields)) return;
  for (const [name, value] of flatten(fields)) {
    const column = fixed.has(name) || name.startsWith("context_") ? fitIdentifier(`_${name}`) : name;
    cells.set(column, { value, type: inferType(value) });
  }
}

/** The `users` row an identify merges: keyed by user id, its traits as columns. */
function userRow(body: Body, receivedAt: Date | undefined): TableRow | undefined {
  const userId = str(body.userId);
  if (!userId) return undefined;
  const cells = new Map<string, Cell>([["id", { value: userId, type: "text" }]]);
  if (receivedAt) cells.set("received_at", { value: receivedAt.toISOString(), type: "timestamptz" });
  addFields(cells, body.traits, fixedColumns("users", false));
  return { table: "users", cells };
}

export { isPlainObject };
