import { useEffect, useState } from "preact/hooks";
import { useLocation } from "preact-iso";
import type { GetDestinationStatsResponse, StatsWindow } from "../../../../gen/waypost/v1/delivery_pb.js";
import type { Destination } from "../../../../gen/waypost/v1/destination_pb.js";
import { formatTime } from "../format.js";
import { kindFormOf } from "../kinds/registry.js";
import { ErrorMessage, HeaderRow } from "../components.js";
import { useLoad } from "../context.js";
import { destinationState } from "../health.js";
import { allDestinations } from "../paging.js";
import { destinationTell } from "../twins.js";
import { DestinationChart } from "./destination-chart.js";
import { HeldBack } from "./held-back.js";
import { TwinHint } from "../names.js";

const refreshMs = 15_000;

function rate(value: number | undefined): string {
  return value === undefined ? "–" : `${(value * 100).toFixed(1)} %`;
}

function ms(value: number): string {
  return value === 0 ? "–" : `${value} ms`;
}

/** The periods the Overview offers, as the stats' windows (minutes). */
const periods = [
  { key: "1h", minutes: 60, label: "1 h", row: "Last hour", long: "last hour" },
  { key: "6h", minutes: 360, label: "6 h", row: "Last 6 h", long: "last 6 hours" },
  { key: "24h", minutes: 1440, label: "24 h", row: "Last 24 h", long: "last 24 hours" },
] as const;
type Period = (typeof periods)[number];

/**
 * Every destination: state, outcomes and failed attempts over the last
 * hour, 6 hours and 24 hours, latency, backlog, and a chart of the chosen
 * period (kept in the query string, so a reload keeps it).
 */
export function OverviewView() {
  const { query, route } = useLocation();
  const [messageId, setMessageId] = useState("");
  const period = periods.find((p) => p.key === query.period) ?? periods[2];
  const loaded = useLoad(async (api) => {
    const destinations = await allDestinations(api);
    const stats = await Promise.all(destinations.map((d) => api.deliveries.getDestinationStats({ destinationId: d.id })));
    return destinations.map((destination, i) => ({ destination, stats: stats[i]! }));
  }, []);
  useEffect(() => {
    const timer = setInterval(loaded.reload, refreshMs);
    return () => clearInterval(timer);
  }, [loaded.reload]);

  return (
    <section>
      <h1>Overview</h1>
      <form
        class="inline"
        aria-label="Find a message"
        onSubmit={(e) => {
          e.preventDefault();
          if (messageId.trim() !== "") route(`/console/messages/${encodeURIComponent(messageId.trim())}`);
        }}
      >
        <label for="overview-message-id">Message ID</label>
        <input id="overview-message-id" value={messageId} onInput={(e) => setMessageId(e.currentTarget.value)} />
        <button type="submit">Explain</button>
      </form>
      <nav class="period" aria-label="Chart period">
        <span class="hint">Chart period:</span>
        {periods.map((p) => (
          // Links rather than a form: the period is in the address, so a reload or a bookmark keeps it.
          <a key={p.key} href={`/console/?period=${p.key}`} aria-current={p === period ? "true" : undefined}>
            {p.label}
          </a>
        ))}
      </nav>
      <ErrorMessage error={loaded.error} />
      {loaded.data?.length === 0 && (
        <p>
          No destinations yet. <a href="/console/destinations/new">Create one</a>.
        </p>
      )}
      <div class="cards">
        {loaded.data?.map(({ destination, stats }) => (
          <DestinationCard
            key={destination.id}
            destination={destination}
            stats={stats}
            period={period}
            twin={loaded.data!.some((other) => other.destination.name === destination.name && other.destination.id !== destination.id)}
          />
        ))}
      </div>
    </section>
  );
}

/** The held-back calls of the chosen period. */
function ChosenHeldBack(props: { destinationId: string; stats: GetDestinationStatsResponse; period: Period }) {
  const w = props.stats.windows.find((window) => window.minutes === props.period.minutes);
  return w ? <HeldBack destinationId={props.destinationId} window={w} period={props.period.long} /> : null;
}

/** Failed attempts out of all attempts: "–" without attempts. */
function failedOf(w: StatsWindow): string {
  return w.attempts === 0n ? "–" : `${w.failedAttempts} of ${w.attempts}`;
}

/** A warehouse's values not stored in their columns: stored NULL or kept out of a full table, all kept in waypost_discards. */
function Discarded(props: { stats: GetDestinationStatsResponse }) {
  const { discardedValuesLastHour: hour, discardedValuesLast24h: day } = props.stats;
  return (
    <p class={day > 0n ? "hint attention" : "hint"} role="note" aria-label="Values not stored in their columns">
      Values not stored in their columns (kept in the warehouse's <code>waypost_discards</code> table): {hour.toString()} in the last hour,{" "}
      {day.toString()} in the last 24 h.
    </p>
  );
}

/** A lake's files: how many it has written, and its last one. */
function LakeFilesWritten(props: { stats: GetDestinationStatsResponse }) {
  const files = props.stats.lakeFiles;
  if (!files) return <p class="hint">No files written yet.</p>;
  return (
    <p class="hint" role="note" aria-label="Files written">
      Files written: {files.files.toString()} ({files.rows.toString()} rows, {megabytes(files.bytes)}). Last: <code>{files.lastFile}</code>,{" "}
      {files.lastFileRows.toString()} rows, {megabytes(files.lastFileBytes)}, at {formatTime(files.lastFileTime)}.
    </p>
  );
}

const megabytes = (bytes: bigint) => `${(Number(bytes) / 1_048_576).toFixed(2)} MB`;

function DestinationCard(props: { destination: Destination; stats: GetDestinationStatsResponse; period: Period; twin: boolean }) {
  const { destination: d, stats: s } = props;
  const state = destinationState(d);
  return (
    <article class="card" aria-label={props.twin ? `${d.name} (${destinationTell(d)})` : d.name}>
      <h2>
        <a href={`/console/deliveries?destination=${d.id}`}>{d.name}</a>
        {props.twin && <TwinHint text={destinationTell(d)} />}
        <span class={`state ${state.replace(/\W+/g, "-")}`}>{state}</span>
      </h2>
      <table aria-label="Outcomes">
        <caption class="hint">Backlog (pending + retrying): {s.backlog.toString()}</caption>
        <HeaderRow columns={["Period", "Delivered", "Failed", "Expired", "Filtered", "Failed attempts", "Success rate", "p50", "p99"]} />
        <tbody>
          {periods.map((p) => {
            const w = s.windows.find((window) => window.minutes === p.minutes);
            if (!w) return null;
            return (
              <tr key={p.key} class={p === props.period ? "chosen" : undefined}>
                <th scope="row">{p.row}</th>
                <td class="num">{w.delivered.toString()}</td>
                <td class="num">{w.failed.toString()}</td>
                <td class="num">{w.expired.toString()}</td>
                <td class="num">
                  {w.filtered > 0n ? (
                    <a
                      href={`/console/destinations/${d.id}/filtered?minutes=${p.minutes}`}
                      aria-label={`${w.filtered} filtered in the ${p.long}: list them`}
                    >
                      {w.filtered.toString()}
                    </a>
                  ) : (
                    "0"
                  )}
                </td>
                <td class={w.failedAttempts > 0n ? "num attention" : "num"}>{failedOf(w)}</td>
                <td class="num">{rate(w.successRate)}</td>
                <td class="num">{ms(w.p50LatencyMs)}</td>
                <td class="num">{ms(w.p99LatencyMs)}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      <ChosenHeldBack destinationId={d.id} stats={s} period={props.period} />
      {kindFormOf(d).discards && <Discarded stats={s} />}
      {d.lake && <LakeFilesWritten stats={s} />}
      <DestinationChart name={d.name} series={s.series} minutes={props.period.minutes} period={props.period.long} />
    </article>
  );
}
