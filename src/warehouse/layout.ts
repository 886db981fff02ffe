import { isCallType, unknownCallType } from "../calls/call.js";
import { type ColumnType, inferType } from "./column-types.js";
import { flatten, isPlainObject } from "./flatten.js";
import { collisionName, fitIdentifier, warehouseName } from "./identifiers.js";

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

/** The table holding what could not be stored in its column (a value of the wrong type, a column past the cap). */
export const discardsTable = "waypost_discards";

/** The tables of the layout itself; an event with one of these names gets its table with a leading `_`. */
export const layoutTables = ["identifies", "tracks", "pages", "screens", "groups", "aliases", "users", discardsTable] as const;

/** The columns every call table has, with their types (created with the table). */
export const commonColumns: ReadonlyMap<string, ColumnType> = new Map<string, ColumnType>([
  ["id", "text"],
  ["received_at", "timestamptz"],
  ["sent_at", "timestamptz"],
  ["timestamp", "timestamptz"],
  ["original_timestamp", "timestamptz"],
  ["user_id", "text"],
  ["anonymous_id", "text"],
  ["loaded_at", "timestamptz"],
]);

/** Columns some tables have besides the common ones. */
const typeColumns: Record<string, ReadonlyArray<[string, ColumnType]>> = {
  tracks: [
    ["event", "text"],
    ["event_text", "text"],
    ["event_table", "text"],
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
      ["loaded_at", "timestamptz"],
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

/** When the client sent the call (its `sentAt`, when it gave one) and when it is loaded. */
export interface LoadTimes {
  sentAt?: Date | undefined;
  loadedAt?: Date | undefined;
}

const str = (value: unknown): string | undefined => (typeof value === "string" && value !== "" ? value : undefined);

/**
 * What a call (its webhook body, as stored) puts into the warehouse. The
 * layout is the analytics-warehouse one: a table per call type, a table per
 * track event holding its properties, `users` with merged traits; context
 * flattened with a `context_` prefix, properties and traits without one.
 */
export function changeOf(body: Body, receivedAt: Date | undefined, times: LoadTimes = {}): WarehouseChange {
  const type = body.type;
  if (type === "delete") {
    const userId = str(body.userId);
    if (!userId) throw new Error("delete notification without userId");
    return { kind: "delete", userId };
  }
  const id = str(body.messageId);
  if (!id) throw new Error("call without messageId");
  if (!isCallType(type)) throw new Error(`unknown call type ${JSON.stringify(type)}`);
  const common = commonCells(body, receivedAt, times);
  const row = (table: string, extra: Array<[string, unknown]>, fields?: unknown, isEventTable = false): TableRow => {
    const cells = new Map(common);
    for (const [name, value] of extra) if (value !== undefined) cells.set(name, { value, type: "text" });
    addFields(cells, fields, fixedColumns(table, isEventTable));
    return { table, cells };
  };
  switch (type) {
    case "track": {
      const event = str(body.event) ?? "";
      const table = eventTable(event);
      const named: Array<[string, unknown]> = [
        ["event", warehouseName(event)],
        ["event_text", event],
        // The event's table is not always `event` (a layout name gets a `_`): say which it is.
        ["event_table", table],
      ];
      return { kind: "rows", id, rows: [row("tracks", named), row(table, named, body.properties, true)], user: undefined };
    }
    case "identify":
      return { kind: "rows", id, rows: [row("identifies", [], body.traits)], user: userRow(body, receivedAt, times) };
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
      return unknownCallType(type);
  }
}

function commonCells(body: Body, receivedAt: Date | undefined, times: LoadTimes): Map<string, Cell> {
  const cells = new Map<string, Cell>();
  const set = (name: string, value: unknown, type: ColumnType) => {
    if (value !== undefined) cells.set(name, { value, type });
  };
  set("id", str(body.messageId), "text");
  set("received_at", receivedAt?.toISOString(), "timestamptz");
  set("sent_at", times.sentAt?.toISOString(), "timestamptz");
  set("loaded_at", times.loadedAt?.toISOString(), "timestamptz");
  set("timestamp", str(body.timestamp), "timestamptz");
  set("original_timestamp", str(body.timestamp), "timestamptz");
  // Alias writes its ids with spaces (the webhook body's shape).
  set("user_id", str(body.userId) ?? str(body["User ID"]), "text");
  set("anonymous_id", str(body.anonymousId), "text");
  for (const [name, value] of flatten(body.context, "context")) cells.set(name, { value, type: inferType(value) });
  return cells;
}

/**
 * Adds properties or traits as columns; a name taken by a fixed column gets
 * a leading `_`, and one taken all the same (`id` beside `_id`) the
 * collision suffix, so no value overwrites another.
 */
function addFields(cells: Map<string, Cell>, fields: unknown, fixed: ReadonlyMap<string, ColumnType>) {
  if (!isPlainObject(fields)) return;
  for (const [name, value] of flatten(fields)) {
    let column = fixed.has(name) || name.startsWith("context_") ? fitIdentifier(`_${name}`) : name;
    if (cells.has(column)) column = collisionName(column, name);
    cells.set(column, { value, type: inferType(value) });
  }
}

/** The `users` row an identify merges: keyed by user id, its traits as columns. */
function userRow(body: Body, receivedAt: Date | undefined, times: LoadTimes): TableRow | undefined {
  const userId = str(body.userId);
  if (!userId) return undefined;
  const cells = new Map<string, Cell>([["id", { value: userId, type: "text" }]]);
  if (receivedAt) cells.set("received_at", { value: receivedAt.toISOString(), type: "timestamptz" });
  if (times.loadedAt) cells.set("loaded_at", { value: times.loadedAt.toISOString(), type: "timestamptz" });
  addFields(cells, body.traits, fixedColumns("users", false));
  return { table: "users", cells };
}

export { isPlainObject };
