import type { JsonSchema } from "./plan-document.js";

const identifier = /^[A-Za-z_$][\w$]*$/;

/** A property name as a TypeScript object key. */
export function tsKey(name: string): string {
  return identifier.test(name) ? name : JSON.stringify(name);
}

/**
 * The TypeScript type of values a JSON Schema accepts, as far as the type
 * system can say: types, enum and const, arrays, objects with their
 * properties (required or optional; closed unless the schema leaves them
 * open), anyOf/oneOf as unions. What it cannot say (formats, ranges,
 * patterns) is checked by the server; what it does not know is `unknown`.
 */
export function schemaType(schema: JsonSchema | undefined, indent = ""): string {
  if (schema === undefined || schema === true) return "unknown";
  if (schema === false) return "never";
  if ("const" in schema) return literal(schema.const);
  if (Array.isArray(schema.enum)) return union(schema.enum.map(literal));
  for (const key of ["anyOf", "oneOf"] as const) {
    const options = schema[key];
    if (Array.isArray(options)) return union(options.map((option) => schemaType(option as JsonSchema, indent)));
  }
  const types = Array.isArray(schema.type) ? (schema.type as string[]) : typeof schema.type === "string" ? [schema.type] : [];
  if (types.length === 0) return schema.properties ? objectType(schema, indent) : "unknown";
  return union(types.map((type) => typeOf(type, schema, indent)));
}

function typeOf(type: string, schema: Record<string, unknown>, indent: string): string {
  switch (type) {
    case "string":
      return "string";
    case "number":
    case "integer":
      return "number";
    case "boolean":
      return "boolean";
    case "null":
      return "null";
    case "array": {
      const items = schema.items as JsonSchema | undefined;
      const item = schemaType(items, indent);
      return item.includes(" ") || item.includes("\n") ? `Array<${item}>` : `${item}[]`;
    }
    case "object":
      return objectType(schema, indent);
    default:
      return "unknown";
  }
}

/** A type literal; with an index signature only when the schema lets other keys in. */
export function objectType(schema: Record<string, unknown>, indent: string): string {
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
  const inner = `${indent}  `;
  const lines: string[] = [];
  for (const [name, child] of Object.entries(properties)) {
    const description = typeof child === "object" && typeof child.description === "string" ? child.description : undefined;
    if (description) lines.push(`${inner}/** ${description.replace(/\*\//g, "* /")} */`);
    lines.push(`${inner}${tsKey(name)}${required.has(name) ? "" : "?"}: ${schemaType(child, inner)};`);
  }
  const additional = schema.additionalProperties;
  const open =
    schema.properties === undefined && schema.patternProperties === undefined
      ? additional !== false
      : additional !== undefined && additional !== false;
  if (open || schema.patternProperties !== undefined) lines.push(`${inner}[key: string]: unknown;`);
  if (lines.length === 0) return "Record<string, never>";
  return `{\n${lines.join("\n")}\n${indent}}`;
}

function literal(value: unknown): string {
  return value === undefined ? "undefined" : JSON.stringify(value);
}

function union(parts: string[]): string {
  const unique = [...new Set(parts)];
  return unique.length === 0 ? "never" : unique.join(" | ");
}
