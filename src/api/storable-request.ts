import { type DescField, type DescMessage, type Message, ScalarType, toJson } from "@bufbuild/protobuf";
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

type Pending = { kind: "message"; desc: DescMessage; value: Message; path: string } | { kind: "json"; value: unknown; path: string };

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

function visitField(field: DescField, value: unknown, path: string, stack: Pending[]): void {
  if (value === undefined || value === null) return;
  switch (field.fieldKind) {
    case "scalar":
      if (field.scalar === ScalarType.STRING) requireText(value, path);
      return;
    case "message":
      pushMessage(field.message, value, path, stack);
      return;
    case "list":
      (value as unknown[]).forEach((element, i) => {
        if (field.listKind === "scalar" && field.scalar === ScalarType.STRING) requireText(element, `${path}[${i}]`);
        if (field.listKind === "message") pushMessage(field.message, element, `${path}[${i}]`, stack);
      });
      return;
    case "map":
      // An entry is named by its key quoted (`values["u2"]`): map keys are data (user ids, header names), not field names.
      for (const [key, element] of Object.entries(value as Record<string, unknown>)) {
        requireStorableKey(key, path);
        const entry = `${path}[${JSON.stringify(key)}]`;
        if (field.mapKind === "scalar" && field.scalar === ScalarType.STRING) requireText(element, entry);
        if (field.mapKind === "message") pushMessage(field.message, element, entry, stack);
      }
      return;
    default:
      return; // enums
  }
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
    const json = isMessage ? jsonOf(desc, value as Message) : value;
    if (json !== undefined) stack.push({ kind: "json", value: json, path });
    return;
  }
  if (isMessage) stack.push({ kind: "message", desc, value: value as Message, path });
}

/** A Value message as JSON; undefined for one that has none (no kind, NaN), which the service refuses in its own words. */
function jsonOf(desc: DescMessage, message: Message): unknown {
  try {
    return toJson(desc, message);
  } catch {
    return undefined;
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
