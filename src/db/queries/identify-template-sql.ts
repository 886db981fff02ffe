// The stored shape of a generated identify call (literal text with holes)
// and the SQL that fills it: audiences build the template, the database
// fills a million holes without the payload passing through Node.

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
