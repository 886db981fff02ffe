// @ts-check
// Where a resolver page's time goes, on the identity scenario's stored graph:
//   node bench/identity-pages.mjs [--identifiers=10000000] [--calls=20000] [--explain]
// (after `npm run build`; DATABASE_URL as for the bench, its server keeps the
// prepared graph: bench/lib/identity-graph.mjs). On a copy of the prepared
// database, `--calls` of the scenario's calls are stored through an `api`
// process with identity resolution off; then the resolver (the build's own,
// in this process) reads them all, every statement timed. Prints the rate,
// CPU µs per call of this process and of Postgres, the WAL written, and per
// statement its time per page of 1,000 calls; with --explain, EXPLAIN
// (ANALYZE, BUFFERS, WAL) of each statement's first run, in a transaction
// rolled back. The copy is dropped at the end.
import pg from "pg";
import { systemClock } from "../dist/src/clock.js";
import { parseIdentity } from "../dist/src/identity-config.js";
import { createIdentityResolver } from "../dist/src/identity/identity-resolver.js";
import { createLogger } from "../dist/src/logger.js";
import { rpc } from "./lib/admin.mjs";
import { cpuSeconds } from "./lib/cpu.mjs";
import { copyOfDatabase, preparedIdentityDatabase } from "./lib/identity-graph.mjs";
import { identityClient } from "./lib/identity-load.mjs";
import { openPostgres } from "./lib/postgres.mjs";
import { startService } from "./lib/service.mjs";

const args = process.argv.slice(2);
const numberArg = (/** @type {string} */ name, /** @type {number} */ fallback) =>
  Number(args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback);
const identifiers = numberArg("identifiers", 10_000_000);
const calls = numberArg("calls", 20_000);
const explain = args.includes("--explain");

const postgres = await openPostgres();
const name = identifiers === 10_000_000 ? "waypost_bench_identity" : `waypost_bench_identity_${identifiers}`;
const prepared = await preparedIdentityDatabase(postgres.serverUrl, {
  identifiers,
  name,
  progress: (step) => process.stderr.write(`building ${name}: ${step}\n`),
});
const db = await copyOfDatabase(postgres.serverUrl, prepared.name);
const pool = new pg.Pool({ connectionString: db.url, max: 4 });
pool.on("error", () => {});
try {
  const service = await startService(db.url, { WAYPOST_ROLE: "api", WAYPOST_IDENTITY: "off", WAYPOST_CALL_LOG: "on" });
  const { source } = await rpc(service.url, "SourceService/CreateSource", { source: { name: "identity" } });
  const client = identityClient(service.url, source.writeKey, prepared.shape);
  for (let sent = 0; sent < calls; sent += 800) await Promise.all(Array.from({ length: 8 }, () => client.sendBatch()));
  client.close();
  await service.stop();
  const stored = (await pool.query("SELECT count(*)::int AS n FROM messages WHERE source_id = $1", [source.id])).rows[0].n;
  await pool.query("INSERT INTO identity_cursors (source_id, seen) VALUES ($1, '1:1:')", [source.id]);
  await pool.query("CHECKPOINT");

  /** @type {Map<string, { n: number, ms: number, text: string, values: unknown[] | undefined }>} */
  const statements = new Map();
  const proto = /** @type {{ query: (...args: any[]) => any }} */ (/** @type {unknown} */ (pg.Client.prototype));
  const query = proto.query;
  proto.query = function (/** @type {any} */ config, /** @type {any} */ values, /** @type {any} */ callback) {
    const text = typeof config === "string" ? config : config.text;
    const label = String(text).replace(/\s+/g, " ").trim().slice(0, 100);
    const started = performance.now();
    const result = query.call(this, config, values, callback);
    if (result && typeof result.then === "function") {
      result.then(
        () => {
          const entry = statements.get(label) ?? {
            n: 0,
            ms: 0,
            text,
            values: typeof config === "string" ? values : (config.values ?? values),
          };
          entry.n++;
          entry.ms += performance.now() - started;
          statements.set(label, entry);
        },
        () => {},
      );
    }
    return result;
  };
  const backends = async () =>
    (await pool.query("SELECT pid FROM pg_stat_activity WHERE datname = current_database()")).rows.map((r) => r.pid);
  const wal = async () => (await pool.query("SELECT wal_bytes::float8 AS bytes, wal_fpi::float8 AS fpi FROM pg_stat_wal")).rows[0];
  const cpuBefore = new Map((await backends()).map((pid) => [pid, cpuSeconds(pid) ?? 0]));
  const walBefore = await wal();
  const self = process.cpuUsage();
  const resolver = createIdentityResolver({ pool, clock: systemClock, logger: createLogger("warn"), config: parseIdentity({}) });
  const started = performance.now();
  await resolver.caughtUp();
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(self);
  const walAfter = await wal();
  let postgresSeconds = 0;
  for (const pid of await backends()) postgresSeconds += (cpuSeconds(pid) ?? 0) - (cpuBefore.get(pid) ?? 0);
  proto.query = query;
  const pages = stored / 1000;
  console.log(
    JSON.stringify({
      identifiers,
      calls: stored,
      seconds: Math.round(seconds * 100) / 100,
      calls_per_s: Math.round(stored / seconds),
      process_us_per_call: Math.round((used.user + used.system) / stored),
      postgres_us_per_call: Math.round((postgresSeconds * 1e6) / stored),
      // Cluster-wide (pg_stat_wal): other databases' writes count too.
      wal_bytes_per_call: Math.round((walAfter.bytes - walBefore.bytes) / stored),
      full_page_images_per_call: Math.round(((walAfter.fpi - walBefore.fpi) / stored) * 100) / 100,
    }),
  );
  const total = [...statements.values()].reduce((sum, s) => sum + s.ms, 0);
  for (const [label, s] of [...statements].sort((a, b) => b[1].ms - a[1].ms)) {
    const perPage = (s.ms / pages).toFixed(1).padStart(7);
    console.log(`${perPage} ms/page ${String(s.n).padStart(6)} runs ${((100 * s.ms) / total).toFixed(0).padStart(3)}%  ${label}`);
  }
  if (explain) {
    for (const [label, { text, values }] of statements) {
      if (/^(BEGIN|COMMIT|ROLLBACK|SELECT pg_advisory)/.test(label)) continue;
      const connection = await pool.connect();
      try {
        await connection.query("BEGIN");
        const { rows } = await connection.query(`EXPLAIN (ANALYZE, BUFFERS, WAL) ${text}`, values);
        console.log(`\n### ${label}\n${rows.map((row) => row["QUERY PLAN"]).join("\n")}`);
      } catch (error) {
        console.log(`\n### ${label}\n${error instanceof Error ? error.message : String(error)}`);
      } finally {
        await connection.query("ROLLBACK");
        connection.release();
      }
    }
  }
} finally {
  await pool.end();
  await db.drop();
  await postgres.close();
}
