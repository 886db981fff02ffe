/**
 * A protobuf enum's values in words, from their names (FAILED is "failed",
 * NOT_CONNECTED "not connected"): the CLI's and the console's tables and
 * labels, so a value added to the enum is shown without a new entry.
 * `special` words the values whose name does not say it to people
 * (UNSPECIFIED, mostly); `capitalized` starts the words with a capital, as
 * the console's labels do. Pass the generated enum itself: its numeric
 * values name themselves (Fate[8] is "NOT_CONNECTED").
 */
export function enumWords<E extends number>(
  enumObject: Record<string, string | E>,
  special: Partial<Record<E, string>> = {},
  capitalized = false,
): Record<E, string> {
  const words = {} as Record<E, string>;
  for (const [name, value] of Object.entries(enumObject)) {
    if (typeof value !== "number") continue;
    const said = name.toLowerCase().replaceAll("_", " ");
    words[value] = special[value] ?? (capitalized ? said.charAt(0).toUpperCase() + said.slice(1) : said);
  }
  return words;
}
