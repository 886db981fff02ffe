import { Ajv } from "ajv";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { InvalidInputError } from "../errors.js";
import { linearRegExpEngine } from "./linear-pattern.js";
import { linearUniqueItems } from "./unique-items.js";

// ajv-formats is CommonJS; under NodeNext its default import is the module object.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as unknown as (ajv: Ajv) => void;

export type Dialect = "2020-12" | "draft-07";

/** The `$schema` values a plan's schema may name (with or without the trailing `#`), and the one Ajv knows each by. */
const dialects: Record<string, { dialect: Dialect; canonical: string }> = {
  "https://json-schema.org/draft/2020-12/schema": { dialect: "2020-12", canonical: "https://json-schema.org/draft/2020-12/schema" },
  "http://json-schema.org/draft-07/schema": { dialect: "draft-07", canonical: "http://json-schema.org/draft-07/schema#" },
  "https://json-schema.org/draft-07/schema": { dialect: "draft-07", canonical: "http://json-schema.org/draft-07/schema#" },
};

const igluMetaSchema = "http://iglucentral.com/schemas/com.snowplowanalytics.self-desc/";

/** An Ajv instance of one dialect, with Waypost's options. */
export type PlanAjv = Ajv;

/**
 * Which JSON Schema dialect a schema is written in: 2020-12 (the default,
 * when there is no `$schema`) or draft-07, the one most schemas in the wild
 * use; both ship with Ajv. The schema to compile comes back too: the same
 * one, or a copy naming the dialect as Ajv knows it. Any other `$schema`
 * (draft-04, 2019-09...) and a Snowplow Iglu schema (its `self` header and
 * meta-schema) are InvalidInputError naming the keyword.
 */
export function readDialect(at: string, schema: Record<string, unknown>): { dialect: Dialect; schema: Record<string, unknown> } {
  const declared = schema.$schema;
  if (schema.self !== undefined || (typeof declared === "string" && declared.startsWith(igluMetaSchema))) {
    throw new InvalidInputError(
      `${at}.self`,
      'is the header of a Snowplow Iglu self-describing schema, which a plan does not take: remove "self" and set "$schema" to "http://json-schema.org/draft-07/schema#" (Iglu schemas are draft-04: also turn a boolean "exclusiveMinimum"/"exclusiveMaximum" into a number)',
    );
  }
  if (declared === undefined) return { dialect: "2020-12", schema };
  const known = typeof declared === "string" ? dialects[declared.replace(/#$/, "")] : undefined;
  if (!known) {
    throw new InvalidInputError(
      `${at}.$schema`,
      `${JSON.stringify(declared)} is not a JSON Schema dialect plans support (use "https://json-schema.org/draft/2020-12/schema" or "http://json-schema.org/draft-07/schema#")`,
    );
  }
  return { dialect: known.dialect, schema: declared === known.canonical ? schema : { ...schema, $schema: known.canonical } };
}

/**
 * A new Ajv instance for a dialect: formats from ajv-formats, every
 * pattern on the linear-time engine, `uniqueItems` in linear time, strict
 * for keywords (a misspelt one is refused).
 */
export function createAjv(dialect: Dialect): PlanAjv {
  const options = {
    allErrors: true,
    strict: true,
    strictTypes: false,
    strictTuples: false,
    strictRequired: false,
    logger: false as const,
    code: { regExp: linearRegExpEngine },
  };
  const ajv = dialect === "2020-12" ? (new Ajv2020(options) as unknown as Ajv) : new Ajv(options);
  addFormats(ajv);
  ajv.removeKeyword("uniqueItems");
  ajv.addKeyword(linearUniqueItems());
  return ajv;
}
