// @ts-check
// The batched-webhooks scenario's same-run reference: Waypost's tables and
// nothing else. WORKERS loops, each on its own connection, claim BATCH due
// deliveries with their bodies (leased as the service leases), POST them
// as one {"batch":[...]} body signed with HMAC-SHA1 to the sink's /batch,
// and move them to the history as delivered in one statement (fenced by
// lease_token). No stages, attempt rows, metrics or retries.
//
//   node bench/bare-batch-delivery.mjs DATABASE_URL SINK_URL COUNT [BATCH=100] [WORKERS=4]
//
// Prints one JSON line: `per_s`, calls from start until the last POST was answered.
import pg from "pg";
import { batchPoster } from "./lib/batch-post.mjs";

const claimStatement = `
  UPDATE delivery_queue d
     SET leased_until = now() + interval '5 minutes', lease_token = d.lease_token + 1
    FROM (SELECT destination_id, id FROM delivery_queue
           WHERE destination_id = $1 AND run_at <= now() AND (leased_until IS NULL OR leased_until <= now())
           ORDER BY run_at LIMIT $2 FOR UPDATE SKIP LOCKED) c, messages m
   WHERE d.destination_id = c.destination_id AND d.id = c.id AND m.id = d.message_pk
  RETURNING d.id, d.lease_token, m.payload`;

const doneStatement = `
  WITH gone AS (
    DELETE FROM delivery_queue d
     USING unnest($2::bigint[], $3::int[]) AS u(id, lease_token)
     WHERE d.destination_id = $1 AND d.id = u.id AND d.lease_token = u.lease_token
    RETURNING d.*
  )
  INSERT INTO delivery_history (destination_id, id, message_pk, source_id, status, created_at, finalized_at, attempt_count,
                                lease_token, first_attempt_at)
  SELECT destination_id, id, message_pk, source_id, 'delivered', created_at, now(), attempt_count + 1, lease_token, now()
    FROM gone`;

const [url, sinkUrl, countText, batchText, workersText] = process.argv.slice(2);
if (!url || !sinkUrl || !countText)
  throw new Error("usage: node bench/bare-batch-delivery.mjs DATABASE_URL SINK_URL COUNT [BATCH=100] [WORKERS=4]");
const [count, batch, workers] = [Number(countText), Number(batchText ?? 100), Number(workersText ?? 4)];
const clients = Array.from({ length: workers }, () => new pg.Client({ connectionString: url }));
await Promise.all(clients.map((c) => c.connect()));
const lookup = new pg.Client({ connectionString: url });
await lookup.connect();
const destinationId = (await lookup.query("SELECT id FROM destinations WHERE name = 'bare-batch'")).rows[0].id;
await lookup.end();
const http = batchPoster(sinkUrl, workers);
let posted = 0;
let lastPostAt = 0;
const start = performance.now();
await Promise.all(
  clients.map(async (client) => {
    while (posted < count) {
      /** @type {{ rows: Array<{ id: string, lease_token: number, payload: string }> }} */
      const { rows } = await client.query({ name: "claim", text: claimStatement, values: [destinationId, batch] });
      if (rows.length === 0) break;
      await http.post(rows.map((r) => r.payload));
      posted += rows.length;
      lastPostAt = performance.now();
      const ids = rows.map((r) => r.id);
      await client.query({ name: "done", text: doneStatement, values: [destinationId, ids, rows.map((r) => r.lease_token)] });
    }
  }),
);
await Promise.all([...clients.map((c) => c.end()), http.close()]);
process.stdout.write(
  `${JSON.stringify({ baseline: "bare-batch-delivery", calls: posted, batch, workers, per_s: Math.round((posted / (lastPostAt - start)) * 1000) })}\n`,
);
