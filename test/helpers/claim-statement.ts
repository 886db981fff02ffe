import { claimDeliveries, type ClaimOptions } from "../../src/db/job-table/index.js";
import type { Queryable } from "../../src/db/pool.js";

/**
 * The claim statement exactly as the delivery loop sends it, captured rather
 * than run, so a test can EXPLAIN it on a table of its own.
 */
export async function claimStatement(options: ClaimOptions): Promise<{ text: string; values: unknown[] }> {
  let captured: { text: string; values: unknown[] } | undefined;
  const recorder = {
    // Sent as a prepared statement ({ name, text, values }).
    query: async (statement: { text: string; values: unknown[] }) => {
      captured = { text: statement.text, values: statement.values };
      return { rows: [] };
    },
  } as unknown as Queryable;
  await claimDeliveries(recorder, options);
  return captured!;
}
