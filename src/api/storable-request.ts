import { type DescField, type DescMessage, type Message, ScalarType } from "@bufbuild/protobuf";
import type { ListValue, Struct, Value } from "@bufbuild/protobuf/wkt";
import type { Interceptor } from "@connectrpc/connect";
import { InvalidInputError, storableTextProblem } from "../errors.js";
import { requireStorableJson, requireStorableKey } from "../routing/storable-text.js";

// Every string an admin request carries ends up in Postgres text or jsonb (a
// name, a secret, a mapping) or compared with it (a search filter), and
// Postgres holds neither NUL nor a lone UTF-16 surrogate: such a value would
// fail as the query's parameter, a 500. Rather than trust each service to
// remember each of its fields, the request is checked once, by its schema,
// before any handler runs: a field added later is covered without a thought.

/** Messages whose JavaScript form is plain JSON (a `Struct` field is a JsonObject). */
const jsonTypes = new Set(["google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue"]);

type Pending =
  | { kind: "message"; desc: DescMessage; value: Message; path: string }
  | { kind: "json"; value: unknown; path: string }
  | { kind: "json message"; value: Message; path: string };

/**
 * Throws an InvalidInputError naming the first string (or map key, or JSON
 * key) of `message` that Postgres cannot store, by its JSON path
 * (`destination.integration.subscriptions[0].mapping.event`). Iterative, and
 * linear in the message, whose size the read limit bounds.
 */
export function requireStorableMessage(desc: DescMessage, message: Message): void {
  const stack: Pending[] = [{ kind: "message", desc, value: message, path: "" }];
  while (stack.length > 0) {
    const item = stack.pop()!;
    if (item.kind === "json") requireStorableJson(item.value, item.path);
    else if (item.kind === "json message") visitJsonMessage(item.value, item.path, stack);
    else for (const field of item.desc.fields) visitField(field, fieldValue(field, item.value), join(item.path, field.jsonName), stack);
  }
}

/** The field's value, looking inside its oneof; undefined when another member is set. */
function fieldValue(field: DescField, message: Message): unknown {
  const record = message as unknown as Record<string, unknown>;
  if (!field.oneof) return record[field.localName];
  const chosen = record[field.oneof.localName] as { case?: string; value?: unknown } | undefined;
  return chosen?.case === field.localName ? chosen.value : undefined;
}

// One pass over a string; the path naming it is built only for a string that fails.
const unstorableText = /[\0\p{Cs}]/u;
const unstorable = (value: unknown) => typeof value === "string" && unstorableText.test(value);

function visitField(field: DescField, value: unknown, path: string, stack: Pending[]): void {
  if (value === undefined || value === null) return;
  const strings = field.scalar === ScalarType.STRING;
  switch (field.fieldKind) {
    case "scalar":
      if (strings) requireText(value, path);
      return;
    case "message":
      pushMessage(field.message, value, path, stack);
      return;
    case "list":
      (value as unknown[]).forEach((element, i) => {
        if (field.listKind === "scalar" && strings && unstorable(element)) requireText(element, `${path}[${i}]`);
        if (field.listKind === "message") pushMessage(field.message, element, `${path}[${i}]`, stack);
      });
      return;
    case "map":
      // An entry is named by its key quoted (`values["u2"]`): map keys are data (user ids, header names), not field names.
      for (const [key, element] of Object.entries(value as Record<string, unknown>)) {
        if (unstorable(key)) requireStorableKey(key, path);
        if (field.mapKind === "scalar" && strings && unstorable(element)) requireText(element, `${path}[${JSON.stringify(key)}]`);
        if (field.mapKind === "message" && !storableScalarValue(element, path, key)) {
          pushMessage(field.message, element, `${path}[${JSON.stringify(key)}]`, stack);
        }
      }
      return;
    default:
      return; // enums
  }
}

/** A Value holding a string, number, bool or null is judged here, sparing the stack (and a path) for each of a sync's values. */
function storableScalarValue(element: unknown, path: string, key: string): boolean {
  if ((element as Message | undefined)?.$typeName !== "google.protobuf.Value") return false;
  const kind = (element as Value).kind;
  if (kind.case === "structValue" || kind.case === "listValue") return false;
  if (kind.case === "stringValue" && unstorable(kind.value)) requireText(kind.value, `${path}[${JSON.stringify(key)}]`);
  return true;
}

/** A message value: a JSON type as JSON, a wrapper (`StringValue`) as its primitive, any other message walked. */
function pushMessage(desc: DescMessage, value: unknown, path: string, stack: Pending[]): void {
  if (typeof value === "string") {
    requireText(value, path);
    return;
  }
  if (typeof value !== "object" || value === null) return;
  const isMessage = "$typeName" in value;
  if (jsonTypes.has(desc.typeName)) {
    stack.push(isMessage ? { kind: "json message", value: value as Message, path } : { kind: "json", value, path });
    return;
  }
  if (isMessage) stack.push({ kind: "message", desc, value: value as Message, path });
}

/**
 * A Struct, Value or ListValue message (a map's values, a list's elements)
 * walked as the JSON it stands for, without converting it: a trait sync
 * carries hundreds of thousands of them.
 */
function visitJsonMessage(message: Message, path: string, stack: Pending[]): void {
  switch (message.$typeName) {
    case "google.protobuf.Value": {
      const kind = (message as Value).kind;
      if (kind.case === "stringValue") requireText(kind.value, path);
      if (kind.case === "structValue" || kind.case === "listValue") stack.push({ kind: "json message", value: kind.value, path });
      return;
    }
    case "google.protobuf.Struct":
      for (const [key, child] of Object.entries((message as Struct).fields)) {
        requireStorableKey(key, path);
        stack.push({ kind: "json message", value: child, path: `${path}.${key}` });
      }
      return;
    case "google.protobuf.ListValue":
      (message as ListValue).values.forEach((child, i) => {
        stack.push({ kind: "json message", value: child, path: `${path}[${i}]` });
      });
      return;
    default:
      return;
  }
}

function requireText(value: unknown, path: string): void {
  if (typeof value !== "string") return;
  const problem = storableTextProblem(value);
  if (problem) throw new InvalidInputError(path, problem);
}

const join = (path: string, name: string) => (path === "" ? name : `${path}.${name}`);

/** Each message of a client stream checked as it arrives; a refusal says which (1-based), as the audience syncs do. */
async function* checkedStream(desc: DescMessage, messages: AsyncIterable<Message>): AsyncIterable<Message> {
  let number = 0;
  for await (const message of messages) {
    number += 1;
    try {
      requireStorableMessage(desc, message);
    } catch (error) {
      if (!(error instanceof InvalidInputError)) throw error;
      throw new InvalidInputError(error.field, `${error.problem} (stream message ${number})`);
    }
    yield message;
  }
}

/**
 * Refuses an admin request holding text Postgres cannot store, as
 * invalid_argument naming the field. It goes inside the domain-error
 * interceptor (which maps the InvalidInputError) and after the credentials,
 * so a caller without them learns nothing of their request's contents.
 */
export function createStorableRequestInterceptor(): Interceptor {
  return (next) => async (request) => {
    if (!request.stream) {
      requireStorableMessage(request.method.input, request.message);
      return next(request);
    }
    return next({ ...request, message: checkedStream(request.method.input, request.message) });
  };
}
