import { randomUUID } from "node:crypto";
import { emptyCall } from "../ingest/call.js";
import { buildCallPayload } from "../ingest/payload.js";

/** What Postgres puts into a hole of the template, per generated call. */
export type TemplateHole = "userId" | "value" | "messageId";

/**
 * The payload of a generated identify call as literal text with holes.
 * `literals` has one more entry than `holes`: the payload is
 * literals[0] + hole[0] + literals[1] + ... + literals[n].
 */
export interface IdentifyTemplate {
  literals: string[];
  holes: TemplateHole[];
  /** UTF-8 bytes of the literal parts: a call's size is this plus its holes. */
  literalBytes: number;
}

/**
 * Builds the template by asking buildCallPayload itself for the payload of
 * an identify call whose userId, trait value and messageId are unique
 * sentinel strings, then cutting at their JSON encodings. The SQL that
 * generates a million calls only fills the holes (with to_json(user_id), the
 * value's JSON text and to_json(message_id)), so key order, the timestamp
 * format, `context: {}` and anything buildCallPayload adds later stay exactly
 * those of ordinary calls, without the SQL knowing them.
 *
 * The timestamp is part of the literals: every call of one sync carries the
 * sync's receive time, as every call of one ingested batch does.
 */
export function identifyTemplate(traitKey: string, receivedAt: Date): IdentifyTemplate {
  const tag = randomUUID();
  const sentinels: Record<TemplateHole, string> = {
    userId: `waypost-hole-user-${tag}`,
    value: `waypost-hole-value-${tag}`,
    messageId: `waypost-hole-message-${tag}`,
  };
  const call = emptyCall("identify");
  call.userId = sentinels.userId;
  call.traits = { [traitKey]: sentinels.value };
  const payload = buildCallPayload(call, sentinels.messageId, receivedAt);

  const found = (Object.keys(sentinels) as TemplateHole[]).map((hole) => {
    const encoded = JSON.stringify(sentinels[hole]);
    const at = payload.indexOf(encoded);
    if (at < 0 || payload.indexOf(encoded, at + 1) >= 0) {
      throw new Error(`identify payload must contain the ${hole} exactly once`);
    }
    return { hole, at, length: encoded.length };
  });
  found.sort((a, b) => a.at - b.at);

  const literals: string[] = [];
  const holes: TemplateHole[] = [];
  let from = 0;
  for (const { hole, at, length } of found) {
    literals.push(payload.slice(from, at));
    holes.push(hole);
    from = at + length;
  }
  literals.push(payload.slice(from));
  const literalBytes = literals.reduce((sum, part) => sum + Buffer.byteLength(part), 0);
  return { literals, holes, literalBytes };
}

/**
 * The SQL expression that fills the template. Literals become parameters
 * (numbered from `firstParam`); `columns` names the SQL expressions that
 * yield the user id (text), the trait value's JSON text, and the message id.
 * to_json(text) escapes exactly as JSON.stringify does for the strings
 * Waypost accepts (no NUL, no lone surrogates, a UTF-8 database): `"`, `\`,
 * \b \f \n \r \t, other controls as lowercase \u00XX, everything else as is.
 */
export function templateSql(
  template: IdentifyTemplate,
  columns: Record<TemplateHole, string>,
  firstParam: number,
): { sql: string; params: string[] } {
  const holeSql: Record<TemplateHole, string> = {
    userId: `to_json(${columns.userId})::text`,
    value: columns.value,
    messageId: `to_json(${columns.messageId})::text`,
  };
  const pieces: string[] = [];
  template.literals.forEach((_, index) => {
    pieces.push(`$${firstParam + index}::text`);
    const hole = template.holes[index];
    if (hole) pieces.push(holeSql[hole]);
  });
  return { sql: pieces.join(" || "), params: template.literals };
}

/** The byte size of one generated call; messageIds are UUIDs (36 characters, quoted). */
export function callBytes(template: IdentifyTemplate, userIdJson: string, valueText: string): number {
  return template.literalBytes + Buffer.byteLength(userIdJson) + Buffer.byteLength(valueText) + 38;
}
