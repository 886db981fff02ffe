import { timestampDate } from "@bufbuild/protobuf/wkt";
import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import type { StatsMinute } from "../../../../gen/waypost/v1/delivery_pb.js";

const minute = 60;

/** Per minute: start (epoch seconds), delivered, failed (failed or expired), failed attempts. */
export type ChartData = [number[], number[], number[], number[]];

/**
 * The series leaves out quiet minutes; the chart wants every minute of the
 * period (the last `minutes` minutes, the current one included), so they
 * are filled in as zeros.
 */
export function perMinute(series: StatsMinute[], nowMs: number, minutes: number): ChartData {
  const end = Math.floor(nowMs / 1000 / minute) * minute;
  const start = end - (minutes - 1) * minute;
  const data: ChartData = [[], [], [], []];
  for (let t = start; t <= end; t += minute) {
    data[0].push(t);
    data[1].push(0);
    data[2].push(0);
    data[3].push(0);
  }
  for (const point of series) {
    if (!point.startTime) continue;
    const t = Math.floor(timestampDate(point.startTime).getTime() / 1000 / minute) * minute;
    const i = (t - start) / minute;
    if (i < 0 || i >= data[0].length) continue;
    data[1][i]! += Number(point.delivered);
    data[2][i]! += Number(point.failed) + Number(point.expired);
    data[3][i]! += Number(point.failedAttempts);
  }
  return data;
}

/**
 * Delivered and failed deliveries per minute, and failed attempts (retryable
 * ones too: an endpoint that keeps failing shows here long before its
 * deliveries fail or expire), drawn by uPlot.
 */
export function DestinationChart(props: { name: string; series: StatsMinute[]; minutes: number; period: string }) {
  const container = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = container.current;
    if (!element) return;
    const data = perMinute(props.series, Date.now(), props.minutes);
    const chart = new uPlot(
      {
        width: Math.max(320, element.clientWidth || 600),
        height: 160,
        legend: { show: true },
        cursor: { drag: { x: false, y: false } },
        scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
        axes: [{}, { size: 44 }],
        series: [
          {},
          { label: "Delivered", stroke: "#177245", fill: "rgba(23, 114, 69, 0.12)", width: 1.5 },
          { label: "Failed", stroke: "#b42318", fill: "rgba(180, 35, 24, 0.12)", width: 1.5 },
          { label: "Failed attempts", stroke: "#b54708", dash: [4, 3], width: 1.5 },
        ],
      },
      data,
      element,
    );
    const resize = new ResizeObserver(() => chart.setSize({ width: Math.max(320, element.clientWidth), height: 160 }));
    resize.observe(element);
    return () => {
      resize.disconnect();
      chart.destroy();
    };
  }, [props.series, props.minutes]);
  return (
    <figure class="chart">
      <div
        ref={container}
        role="img"
        aria-label={`Delivered, failed and failed attempts per minute over the ${props.period}, ${props.name}`}
      />
      <figcaption class="hint">Delivered, failed (failed or expired) and failed attempts per minute, {props.period}</figcaption>
    </figure>
  );
}
