import { useEffect } from "preact/hooks";
import type { GetDestinationStatsResponse } from "../../../../gen/waypost/v1/delivery_pb.js";
import type { Destination } from "../../../../gen/waypost/v1/destination_pb.js";
import { ErrorMessage, HeaderRow } from "../components.js";
import { useLoad } from "../context.js";
import { destinationState } from "../health.js";
import { listAll } from "../paging.js";
import { DestinationChart } from "./destination-chart.js";

const refreshMs = 15_000;

function rate(value: number | undefined): string {
  return value === undefined ? "–" : `${(value * 100).toFixed(1)} %`;
}

function ms(value: number): string {
  return value === 0 ? "–" : `${value} ms`;
}

/** Every destination: state, recent outcomes, latency, backlog and a 24-hour chart. */
export function OverviewView() {
  const loaded = useLoad(async (api) => {
    const destinations = await listAll(
      (pageToken) => api.destinations.listDestinations({ pageToken, pageSize: 100 }),
      (r) => r.destinations,
    );
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
      <ErrorMessage error={loaded.error} />
      {loaded.data?.length === 0 && (
        <p>
          No destinations yet. <a href="/console/destinations/new">Create one</a>.
        </p>
      )}
      <div class="cards">
        {loaded.data?.map(({ destination, stats }) => (
          <DestinationCard key={destination.id} destination={destination} stats={stats} />
        ))}
      </div>
    </section>
  );
}

function DestinationCard(props: { destination: Destination; stats: GetDestinationStatsResponse }) {
  const { destination: d, stats: s } = props;
  const state = destinationState(d);
  return (
    <article class="card" aria-label={d.name}>
      <h2>
        <a href={`/console/deliveries?destination=${d.id}`}>{d.name}</a>
        <span class={`state ${state.replace(/\W+/g, "-")}`}>{state}</span>
      </h2>
      <table aria-label="Outcomes">
        <caption class="hint">Backlog (pending + retrying): {s.backlog.toString()}</caption>
        <HeaderRow columns={["Period", "Delivered", "Failed", "Expired", "Success rate", "p50", "p99"]} />
        <tbody>
          <tr>
            <th scope="row">Last hour</th>
            <td class="num">{s.deliveredLastHour.toString()}</td>
            <td class="num">{s.failedLastHour.toString()}</td>
            <td class="num">{s.expiredLastHour.toString()}</td>
            <td class="num">{rate(s.successRateLastHour)}</td>
            <td class="num">{ms(s.p50LatencyMsLastHour)}</td>
            <td class="num">{ms(s.p99LatencyMsLastHour)}</td>
          </tr>
          <tr>
            <th scope="row">Last 24 h</th>
            <td class="num">{s.deliveredLast24h.toString()}</td>
            <td class="num">{s.failedLast24h.toString()}</td>
            <td class="num">{s.expiredLast24h.toString()}</td>
            <td class="num">{rate(s.successRateLast24h)}</td>
            <td class="num">{ms(s.p50LatencyMsLast24h)}</td>
            <td class="num">{ms(s.p99LatencyMsLast24h)}</td>
          </tr>
        </tbody>
      </table>
      <DestinationChart name={d.name} series={s.series} />
    </article>
  );
}
