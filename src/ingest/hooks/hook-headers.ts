/** Request headers as Node gives them (lower-case names; arrays only for a few). */
export type HookHeaders = Record<string, string | string[] | undefined>;

/**
 * A header's value by name, whatever the case of the stored names; the first
 * of several; undefined when absent or empty.
 */
export function hookHeader(headers: HookHeaders, name: string): string | undefined {
  const lower = name.toLowerCase();
  let value = headers[lower];
  if (value === undefined) {
    const key = Object.keys(headers).find((candidate) => candidate.toLowerCase() === lower);
    value = key === undefined ? undefined : headers[key];
  }
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined || first === "" ? undefined : first;
}
