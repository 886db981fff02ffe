import type { FuncKeywordDefinition } from "ajv/dist/2020.js";

interface UniqueItemsValidate {
  (schema: boolean, data: unknown[]): boolean;
  errors?: Array<{ keyword: string; message: string; params: Record<string, unknown> }>;
}

/**
 * `uniqueItems` in time linear in the array's size. Ajv's own keyword
 * compares every pair of items whose type it cannot hash, so 40,000
 * distinct small objects or arrays (a few hundred KB, one call) take
 * seconds of the event loop. Here each item is written once as a
 * canonical text (object keys sorted, numbers as JSON writes them, so
 * `1` and `1.0` are equal as JSON Schema says) and looked up in a set.
 */
export function linearUniqueItems(): FuncKeywordDefinition {
  return { keyword: "uniqueItems", type: "array", schemaType: "boolean", errors: true, validate: uniqueItems() };
}

function uniqueItems(): UniqueItemsValidate {
  const validate: UniqueItemsValidate = (schema, data) => {
    validate.errors = undefined;
    if (!schema) return true;
    const seen = new Map<string, number>();
    for (let j = 0; j < data.length; j += 1) {
      const key = canonical(data[j]);
      const i = seen.get(key);
      if (i !== undefined) {
        validate.errors = [
          {
            keyword: "uniqueItems",
            message: `must NOT have duplicate items (items ## ${j} and ${i} are identical)`,
            params: { i: j, j: i },
          },
        ];
        return false;
      }
      seen.set(key, j);
    }
    return true;
  };
  return validate;
}

function canonical(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  const object = value as Record<string, unknown>;
  const keys = Object.keys(object).sort();
  return `{${keys.map((key) => `${JSON.stringify(key)}:${canonical(object[key])}`).join(",")}}`;
}
