/**
 * V8's young generation, capped by `WAYPOST_SEMI_SPACE_MB` (16 MB per
 * semi-space by default; 0 leaves Node's own). Node 24 sizes it from the
 * machine's memory, 64 MB per semi-space on a 24 GB machine, and a loaded
 * service keeps it full: peak RSS 390 MB in the bench's warehouse run on the
 * call log, against 290 MB with 16 MB semi-spaces. V8 reads the cap only from
 * the command line (`v8.setFlagsFromString` at run time leaves the size as
 * it is), so the entry (start.ts) starts the process again with the flag
 * when it is not there. An operator's own `--max-semi-space-size` (on the
 * node command line or in NODE_OPTIONS) wins.
 */

const flag = "--max-semi-space-size";

/**
 * The node options to start again with, or undefined: the cap is off, the
 * operator set one, or the variable is not a whole number from 0 to 1024
 * (the configuration then refuses it with its own message).
 */
export function semiSpaceArgs(env: Record<string, string | undefined>, execArgv: readonly string[]): string[] | undefined {
  const raw = env.WAYPOST_SEMI_SPACE_MB ?? "16";
  if (!/^\d{1,4}$/.test(raw) || Number(raw) > 1024 || Number(raw) === 0) return undefined;
  const given = [...execArgv, ...(env.NODE_OPTIONS ?? "").split(/\s+/)];
  if (given.some((arg) => arg.startsWith(flag))) return undefined;
  return [`${flag}=${Number(raw)}`];
}
