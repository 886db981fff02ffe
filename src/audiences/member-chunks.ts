import type { Value } from "@bufbuild/protobuf/wkt";
import { InvalidInputError } from "../errors.js";
import { limits } from "../ingest/limits.js";
import { callBytes, type IdentifyTemplate } from "./identify-template.js";
import { traitValueText } from "./trait-value.js";
import { requireUserId } from "./user-id.js";

/** Validated rows, ready for one staging INSERT. */
export interface StageChunk {
  userIds: string[];
  /** Computed traits: the JSON text of each value. Undefined for an audience (all `true`). */
  valueTexts: string[] | undefined;
}

/**
 * Rows per staging INSERT. Large enough that a million users take 100 round
 * trips, small enough that one statement's parameters stay a few MB. A
 * request message holding more is cut into several chunks.
 */
export const rowsPerChunk = 10_000;

/**
 * Chunks of an audience's user ids (one request message), validated before
 * they are staged. `where` tells which stream message the ids came from, so
 * an error names the field by its index in that message: `userIds[3]`.
 * Duplicates are left to the stage's primary key.
 */
export function* audienceChunks(userIds: readonly string[], where = ""): Generator<StageChunk> {
  for (let start = 0; start < userIds.length; start += rowsPerChunk) {
    const slice = userIds.slice(start, start + rowsPerChunk);
    slice.forEach((userId, offset) => {
      requireUserId(`userIds[${start + offset}]`, userId, where);
    });
    yield { userIds: slice, valueTexts: undefined };
  }
}

/**
 * Chunks of a computed trait's values (one request message): each user id
 * validated, each value turned into the JSON text the identify call will
 * carry, and each call checked against the 32 KB limit of one call, so a
 * huge value fails the sync up front instead of producing an undeliverable
 * message. Errors name the map entry: `values["u1"]`.
 */
export function* traitChunks(values: { [userId: string]: Value }, template: IdentifyTemplate, where = ""): Generator<StageChunk> {
  let chunk: StageChunk = { userIds: [], valueTexts: [] };
  for (const [userId, value] of Object.entries(values)) {
    const field = `values[${JSON.stringify(userId.slice(0, 64))}]`;
    requireUserId(field, userId, where);
    const converted = traitValueText(value);
    if ("problem" in converted) throw new InvalidInputError(field, converted.problem + where);
    const bytes = callBytes(template, JSON.stringify(userId), converted.text);
    if (bytes > limits.maxCallBytes) {
      throw new InvalidInputError(
        field,
        `the identify call would be ${bytes} bytes, over the limit of ${limits.maxCallBytes} bytes (32 KB) per call${where}`,
      );
    }
    chunk.userIds.push(userId);
    chunk.valueTexts!.push(converted.text);
    if (chunk.userIds.length === rowsPerChunk) {
      yield chunk;
      chunk = { userIds: [], valueTexts: [] };
    }
  }
  if (chunk.userIds.length > 0) yield chunk;
}
