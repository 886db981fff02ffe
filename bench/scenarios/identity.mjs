// @ts-check
import { monitorEventLoopDelay } from "node:perf_hooks";
import pg from "pg";
import { unreadByCursorSql } from "../../dist/src/db/call-log/log-read.js";
import { rpc } from "../lib/admin.mjs";
import { startCpuMeter } from "../lib/cpu.mjs";
import { copyOfDatabase, preparedIdentityDatabase } from "../lib/identity-graph.mjs";
import { batchMix, batchSize, identityClient, runIdentityLoad, runPacedLoad, startProfileProbe } from "../lib/identity-load.mjs";
import { startService } from "../lib/service.mjs";
import { report, sleep, summarize } from "../lib/stats.mjs";
import { checkTarget, ratioOf } from "../lib/targets.mjs";

const ratioTarget = "ingest with identity resolution on, ratio to off, identifiers already stored";
const latencyTarget = "GetProfile p99 ms during ingest with identity resolution on";

/**
 * Identity resolution's cost to ingest, on a stored graph of `identifiers`
 * (bench/lib/identity-graph.mjs: built once per server and count, then copied
 * for each run). Batch RPCs of 100 calls (bench/lib/identity-load.mjs's mix:
 * known users, stored anonymous visitors, new visitors signing up, stored
 * visitors logging in: merges) from `concurrency` streams into one `all`
 * process (its resolver, when on, in the same process as by default), in a
 * source with no destination, windows off, on, on, off (a service started
 * per mode, `WAYPOST_IDENTITY`); GetProfile by identifier over the admin API at
 * `probeRate` a second throughout. With identity on: the calls the resolver
 * had not read when each window's load stopped, and the time it took to read
 * them with the load stopped (and what that cost the service and Postgres per
 * call). Then, for what a service below its peak sees: a window paced at a
 * tenth of the first off window's rate, on and off, and GetProfile with
 * nothing ingested (on). GetProfile is asked of two processes at once: the
 * one taking the load (admin API and ingest in one event loop, as by
 * default) and an `api` process beside it that takes no calls (the admin
 * API apart from ingest, as docs/scaling.md suggests for a busy
 * installation); and the bench's own event-loop delay is reported, as its
 * load generator shares a loop with the probes. Goals: on at least 0.7 of
 * off at full load; GetProfile p99 under 20 ms during the full-load windows
 * with identity on.
 * @param {{ serverUrl: string, identifiers: number, durationMs: number, concurrency?: number, probeRate?: number }} options
 */
export async function identityScenario({
  serverUrl,
  identifiers,
  durationMs,
  concurrency = Number(process.env.BENCH_INGEST_CONCURRENCY ?? 8),
  probeRate = 20,
}) {
  const name = identifiers === 10_000_000 ? "waypost_bench_identity" : `waypost_bench_identity_${identifiers}`;
  const prepared = await preparedIdentityDatabase(serverUrl, {
    identifiers,
    name,
    progress: (step) => process.stderr.write(`identity: building ${name}: ${step}\n`),
  });
  const { shape } = prepared;
  const db = await copyOfDatabase(serverUrl, prepared.name);
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  // pool.end() resolves before its connections have closed: the drop's FORCE may end one still closing.
  pool.on("error", () => {});
  /** @type {import("../lib/service.mjs").Service[]} */
  const services = [];
  try {
    /** @type {Record<"off" | "on", Array<Record<string, unknown>>>} */
    const windows = { off: [], on: [] };
    /** @type {Record<"off" | "on", Array<Record<string, unknown>>>} */
    const paced = { off: [], on: [] };
    /** @type {Record<"off" | "on", number[]>} */
    const probes = { off: [], on: [] };
    /** @type {Record<"off" | "on", number[]>} */
    const apartProbes = { off: [], on: [] };
    /** @type {Record<"off" | "on", number[]>} */
    const rpcLatencies = { off: [], on: [] };
    /** @type {string[]} */
    const probeErrors = [];
    /** @type {Record<string, unknown> | undefined} */
    let atRest;
    let sourceId = "";
    let writeKey = "";
    let peakRss = 0;
    let pacedRate = 0;
    /** Calls acknowledged per mode, warm-ups included: what the stored and resolved counts are checked against. */
    const sent = { off: 0, on: 0 };

    /**
     * One window of load with GetProfile probes beside it; with identity on, the resolver's lag at its end and its catch-up after.
     * @param {import("../lib/service.mjs").Service} service
     * @param {"off" | "on"} mode
     * @param {() => Promise<{ calls: number, latencies: number[], elapsedMs: number, skipped?: number }>} load
     * @param {import("../lib/service.mjs").Service} apart an api process taking no calls
     */
    async function measure(service, mode, load, apart) {
      const probe = startProfileProbe(service.url, shape, probeRate);
      const apartProbe = startProfileProbe(apart.url, shape, probeRate);
      const loopDelay = monitorEventLoopDelay({ resolution: 5 });
      loopDelay.enable();
      const meter = await startCpuMeter(pool, { service: service.pid });
      const run = await load();
      const behind = mode === "on" ? await unresolved(pool, sourceId) : null;
      const { used } = await meter.stop();
      const probed = await probe.stop();
      const apartProbed = await apartProbe.stop();
      loopDelay.disable();
      probeErrors.push(...probed.errors, ...apartProbed.errors);
      sent[mode] += run.calls;
      /** @type {Record<string, unknown>} */
      const window = {
        rate: Math.round((run.calls / run.elapsedMs) * 1000),
        calls: run.calls,
        ...(run.skipped ? { sends_skipped: run.skipped } : {}),
        cpu_us_per_call: { service: perCall(used.service, run.calls), postgres: perCall(used.postgres, run.calls) },
        get_profile_ms: summarize(probed.latencies),
        get_profile_apart_ms: summarize(apartProbed.latencies),
        bench_event_loop_delay_ms: { p50: loopDelay.percentile(50) / 1e6, p99: loopDelay.percentile(99) / 1e6, max: loopDelay.max / 1e6 },
      };
      if (behind !== null) {
        const catchUp = await startCpuMeter(pool, { service: service.pid });
        const started = performance.now();
        const left = await caughtUp(pool, sourceId);
        const seconds = (performance.now() - started) / 1000;
        const spent = await catchUp.stop();
        Object.assign(window, {
          unresolved_at_end: behind,
          // The window's calls over the time until the last of them was resolved: the rate the service sustains resolved.
          resolved_end_to_end_per_s: left === 0 ? Math.round(run.calls / (run.elapsedMs / 1000 + seconds)) : null,
          resolved_during_load_per_s: Math.round(((run.calls - behind) / run.elapsedMs) * 1000),
          catch_up_s: left === 0 ? Math.round(seconds * 10) / 10 : null,
          unresolved_after_catch_up: left,
          // Rates and costs of the catch-up only over 5 pages or more (a page or two is within one poll).
          resolved_alone_per_s: behind >= 5_000 && left === 0 ? Math.round(behind / seconds) : null,
          catch_up_cpu_us_per_call:
            behind - left >= 5_000
              ? { service: perCall(spent.used.service, behind - left), postgres: perCall(spent.used.postgres, behind - left) }
              : null,
        });
      }
      return { window, probed, apartProbed, run };
    }

    // Windows off, on, on, off at full load (8 streams, each sending as soon as answered); then, at a tenth of
    // the first off window's rate, paced windows on and off; and GetProfile alone, identity on, nothing ingested.
    for (const [mode, count] of /** @type {const} */ ([
      ["off", 1],
      ["on", 2],
      ["off", 1],
    ])) {
      if (mode === "on") {
        // The resolver starts at the calls stored from now on: the off windows' calls are not its to read.
        await pool.query(
          `INSERT INTO identity_cursors (source_id, seen) SELECT id, pg_current_snapshot() FROM sources
           ON CONFLICT (source_id) DO UPDATE SET seen = excluded.seen, up_to = NULL, after_xid = '0', after_id = 0`,
        );
      }
      const service = await startService(db.url, { WAYPOST_IDENTITY: mode, WAYPOST_CALL_LOG: "on" });
      services.push(service);
      const apart = await startService(db.url, { WAYPOST_ROLE: "api", WAYPOST_IDENTITY: mode, WAYPOST_CALL_LOG: "on" });
      services.push(apart);
      if (!sourceId) {
        const { source } = await rpc(service.url, "SourceService/CreateSource", { source: { name: "identity" } });
        sourceId = source.id;
        writeKey = source.writeKey;
      }
      const client = identityClient(service.url, writeKey, shape);
      sent[mode] += (await runIdentityLoad(client, 1_000, concurrency)).calls; // warm-up: JIT, connections, the graph's pages
      if (mode === "on") await caughtUp(pool, sourceId);
      for (let n = 0; n < count; n++) {
        const { window, probed, apartProbed, run } = await measure(
          service,
          mode,
          () => runIdentityLoad(client, durationMs, concurrency),
          apart,
        );
        windows[mode].push(window);
        probes[mode].push(...probed.latencies);
        apartProbes[mode].push(...apartProbed.latencies);
        rpcLatencies[mode].push(...run.latencies);
        pacedRate ||= Math.max(batchSize, Math.round(Number(window.rate) / 10 / batchSize) * batchSize);
      }
      if (mode === "on" || windows.off.length === 2) {
        const { window } = await measure(service, mode, () => runPacedLoad(client, durationMs, pacedRate), apart);
        paced[mode].push(window);
      }
      if (mode === "on") {
        const probe = startProfileProbe(service.url, shape, probeRate);
        await sleep(durationMs);
        const probed = await probe.stop();
        probeErrors.push(...probed.errors);
        atRest = { ...summarize(probed.latencies), probes: probed.latencies.length };
      }
      client.close();
      peakRss = Math.max(peakRss, service.peakRssMb());
      await service.stop();
      await apart.stop();
    }
    const mean = (/** @type {Array<Record<string, unknown>>} */ ws) =>
      Math.round(ws.reduce((sum, w) => sum + Number(w.rate), 0) / ws.length);
    const rateOff = mean(windows.off);
    const rateOn = mean(windows.on);
    const ratio = ratioOf(rateOn, rateOff);
    const resolvedOn = windows.on.every((w) => typeof w.resolved_end_to_end_per_s === "number")
      ? Math.round(windows.on.reduce((sum, w) => sum + Number(w.resolved_end_to_end_per_s), 0) / windows.on.length)
      : null;
    const latencyOn = summarize(probes.on);
    const ratioCheck = checkTarget(ratioTarget, ratio, 0.7);
    const latencyCheck = checkTarget(latencyTarget, latencyOn.p99, 20, { atMost: true });
    const graph = await graphAfter(pool, sourceId);
    // Every acknowledged call stored once (no messageId repeated), and every call of the on windows resolved.
    const counted = graph.calls_stored === sent.off + sent.on && graph.profile_calls === sent.on;
    const common = {
      unit: "calls/s accepted",
      identifiers_stored: shape.identifiers,
      concurrency,
      batch_size: batchSize,
    };
    report({
      scenario: "identity",
      mode: "off",
      rate: rateOff,
      ...common,
      windows: windows.off,
      rpc_latency_ms: summarize(rpcLatencies.off),
      get_profile_ms: { ...summarize(probes.off), probes: probes.off.length },
      get_profile_apart_ms: { ...summarize(apartProbes.off), probes: apartProbes.off.length },
      paced: { rate_asked: pacedRate, ...paced.off[0] },
    });
    report({
      scenario: "identity",
      mode: "on",
      rate: rateOn,
      ...common,
      rate_off: rateOff,
      ratio,
      // Accepted and resolved: each full-load window's calls over the time until the resolver had read them all.
      resolved_rate: resolvedOn,
      ratio_resolved_to_off: ratioOf(resolvedOn, rateOff),
      target: { ratio: ratioCheck.goal, get_profile_p99_ms: latencyCheck.goal, met: ratioCheck.met && latencyCheck.met },
      calls_sent: sent,
      counts_match: counted,
      get_profile_ms: { ...latencyOn, probes: probes.on.length, per_s: probeRate, errors: probeErrors.length, error: probeErrors[0] },
      // The admin API in an api process of its own, beside the one taking the calls.
      get_profile_apart_ms: { ...summarize(apartProbes.on), probes: apartProbes.on.length },
      windows: windows.on,
      rpc_latency_ms: summarize(rpcLatencies.on),
      paced: { rate_asked: pacedRate, ...paced.on[0] },
      get_profile_at_rest_ms: atRest,
      mix_per_batch: batchMix,
      graph: {
        identifiers: shape.identifiers,
        profiles: shape.profiles,
        users: shape.users,
        anonymous_only: shape.anonymousOnly,
        prepared: prepared.name,
        reused: prepared.reused,
        build_s: prepared.build_s,
        built_at: prepared.built_at,
        copy_s: db.copy_s,
        after_run: graph,
      },
      server_peak_rss_mb: peakRss,
    });
    return { ratio, rss: peakRss };
  } finally {
    for (const service of services) await service.stop();
    await pool.end();
    await db.drop();
  }
}

const perCall = (/** @type {number | null} */ seconds, /** @type {number} */ calls) =>
  seconds === null || calls <= 0 ? null : Math.round((seconds * 1e6) / calls);

/**
 * The source's calls the resolver has not read: committed after its cursor's last burst, and not read in the current one.
 * @param {pg.Pool} pool
 * @param {string} sourceId
 * @returns {Promise<number>}
 */
async function unresolved(pool, sourceId) {
  const { rows } = await pool.query(
    `SELECT count(*)::int AS n FROM identity_cursors c JOIN messages m ON m.source_id = c.source_id
      WHERE c.source_id = $1 AND ${unreadByCursorSql("c", "m")}`,
    [sourceId],
  );
  return rows[0].n;
}

/**
 * Polls until the resolver has read every call of the source, at most 10 minutes; resolves with how many are left (0: caught up).
 * @param {pg.Pool} pool
 * @param {string} sourceId
 */
async function caughtUp(pool, sourceId) {
  const deadline = Date.now() + 600_000;
  for (;;) {
    const left = await unresolved(pool, sourceId);
    if (left === 0 || Date.now() > deadline) return left;
    await sleep(250);
  }
}

/**
 * What the run left: the source's calls stored, and the graph.
 * @param {pg.Pool} pool
 * @param {string} sourceId
 * @returns {Promise<{ calls_stored: number, identifiers: number, profiles: number, merged: number, profile_calls: number }>}
 */
async function graphAfter(pool, sourceId) {
  const { rows } = await pool.query(
    `SELECT (SELECT count(*) FROM messages WHERE source_id = $1)::int AS calls_stored,
            (SELECT count(*) FROM profile_identifiers)::int AS identifiers, (SELECT count(*) FROM profiles)::int AS profiles,
            (SELECT count(*) FROM profiles WHERE merged_into IS NOT NULL)::int AS merged,
            (SELECT count(*) FROM profile_calls)::int AS profile_calls`,
    [sourceId],
  );
  return rows[0];
}
