import { JobState } from "../../../gen/waypost/v1/job_pb.js";
import type { CliContext } from "../context.js";
import { CommandFailure, describeRpcError } from "../errors.js";
import { enumWords } from "../../enum-words.js";

/** A background job as the CLI follows it: its state and a count towards a total. */
export interface JobSnapshot {
  state: JobState;
  done: bigint;
  total: bigint;
  /** The counters in words, e.g. `created 40, filtered 2 of 100 candidates`. */
  summary: string;
  error: string;
}

export const jobStateNames = enumWords(JobState, { [JobState.UNSPECIFIED]: "-" });

const barWidth = 30;

/** `[#########.............]  30%`: how far a job is. */
export function progressBar(snapshot: JobSnapshot): string {
  const fraction =
    snapshot.state === JobState.DONE || snapshot.total === 0n ? 1 : Math.min(1, Number(snapshot.done) / Number(snapshot.total));
  const filled = Math.round(fraction * barWidth);
  return `[${"#".repeat(filled)}${".".repeat(barWidth - filled)}] ${String(Math.floor(fraction * 100)).padStart(3)}%`;
}

export interface FollowOptions<T> {
  /** What the job is, for the messages: `backfill 1b2c...`. */
  label: string;
  /** How to follow it again later: `waypost backfills get ID --wait`. */
  later: string;
  first: T;
  read(): Promise<T>;
  view(job: T): JobSnapshot;
  intervalMs?: number;
}

/**
 * Follows a job until it ends, showing its progress: on a terminal a bar
 * redrawn in place, otherwise a line whenever the counts change (nothing
 * with --json). Ctrl-C stops following, not the job. Resolves with the job
 * as it ended; a job that was cancelled or failed is a CommandFailure.
 */
export async function followJob<T>(ctx: CliContext, options: FollowOptions<T>): Promise<T> {
  const intervalMs = options.intervalMs ?? 500;
  let job = options.first;
  let shown = "";
  const show = (snapshot: JobSnapshot) => {
    if (ctx.json) return;
    const line = `${progressBar(snapshot)}  ${snapshot.summary}`;
    if (line === shown) return;
    shown = line;
    if (ctx.tty) ctx.write(`\r${line}\x1b[K`);
    else ctx.out(line);
  };
  if (!ctx.json) ctx.out(`${options.label} started; Ctrl-C stops following, not the job (see it again: ${options.later})`);
  for (;;) {
    const snapshot = options.view(job);
    show(snapshot);
    if (snapshot.state !== JobState.RUNNING) {
      if (ctx.tty && !ctx.json) ctx.write("\n");
      if (snapshot.state === JobState.DONE) return job;
      throw new CommandFailure(`${options.label} ${jobStateNames[snapshot.state]}: ${snapshot.error || "no reason given"}`);
    }
    const next = (await pause(intervalMs, ctx.signal)) ? await readOrExplain(ctx, options) : undefined;
    if (next === undefined) {
      if (ctx.tty && !ctx.json) ctx.write("\n");
      ctx.err(`stopped following; ${options.label} goes on in the background (${options.later})`);
      return job;
    }
    job = next;
  }
}

/**
 * The job's next state. The job runs in the server: when the server cannot
 * be reached (restarted, or gone), following stops, saying that the job
 * goes on (a restarted server resumes it) and how to follow it again.
 */
async function readOrExplain<T>(ctx: CliContext, options: FollowOptions<T>): Promise<T | undefined> {
  try {
    return await options.read();
  } catch (error) {
    // Ctrl-C while reading: stopped following, as between reads.
    if (ctx.signal.aborted) return undefined;
    if (ctx.tty && !ctx.json) ctx.write("\n");
    throw new CommandFailure(
      `lost the server while following ${options.label} (${describeRpcError(error)}); the job goes on in the server ` +
        `(a restarted server resumes it): follow it again with ${options.later}`,
    );
  }
}

/** Waits; false when the signal (Ctrl-C) came first. */
export function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
