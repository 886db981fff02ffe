import { randomUUID } from "node:crypto";
import { emptyCall } from "../calls/call.js";
import { buildCallPayload } from "../ingest/payload.js";
import type { IdentifyTemplate, TemplateHole } from "../db/queries/identify-template-sql.js";

export type { IdentifyTemplate, TemplateHole };

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

/** The byte size of one generated call; messageIds are UUIDs (36 characters, quoted). */
export function callBytes(template: IdentifyTemplate, userIdJson: string, valueText: string): number {
  return template.literalBytes + Buffer.byteLength(userIdJson) + Buffer.byteLength(valueText) + 38;
}
