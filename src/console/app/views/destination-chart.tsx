import { timestampDate } from "@bufbuild/protobuf/wkt";
import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import type { StatsMinute } from "../../../../gen/waypost/v1/delivery_pb.js";

const minute = 60;
const day = 24 * 60 * minute;

/**
 * The series leaves out quiet minutes; the chart wants every minute of the
 * last 24 hours, so they are filled in as zeros.
 */
export function perMinute(series: StatsMinute[], nowMs: number): [number[], number[], number[]] {
  const end = Math.floor(nowMs / 1000 / minute) * minute;
  const start = end - day + minute;
  const xs: number[] = [];
  const delivered: number[] = [];
  const failed: number[] = [];
  for (let t = start; t <= end; t += minute) {
    xs.push(t);
    delivered.push(0);
    failed.push(0);
  }
  for (const point of series) {
    if (!point.startTime) continue;
    const t = Math.floor(timestampDate(point.startTime).getTime() / 1000 / minute) * minute;
    const i = (t - start) / minute;
    if (i < 0 || i >= xs.length) continue;
    delivered[i]! += Number(point.delivered);
    failed[i]! += Number(point.failed) + Number(point.expired);
  }
  return [xs, delivered, failed];
}

/** Delivered and failed (failed or expired) per minute over the last 24 hours, drawn by uPlot. */
export function DestinationChart(props: { name: string; series: StatsMinute[] }) {
  const container = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = container.current;
    if (!element) return;
    const data = perMinute(props.series, Date.now());
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
  }, [props.series]);
  return (
    <figure class="chart">
      <div ref={container} role="img" aria-label={`Delivered and failed per minute over the last 24 hours, ${props.name}`} />
      <figcaption class="hint">Delivered and failed per minute, last 24 h</figcaption>
    </figure>
  );
}
