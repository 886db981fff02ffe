import { useEffect, useState } from "preact/hooks";
import { JobState } from "../../../gen/waypost/v1/job_pb.js";
import type { Api } from "./api.js";
import { useSession } from "./context.js";
import { enumWords } from "../../enum-words.js";

export const jobStateLabels = enumWords(JobState, { [JobState.UNSPECIFIED]: "-" }, true);

/** A job's progress bar: done of total (full once the job is done). */
export function JobProgress(props: { state: JobState; done: bigint; total: bigint; label: string }) {
  const total = props.total === 0n ? 1 : Number(props.total);
  const value = props.state === JobState.DONE ? total : Math.min(total, Number(props.done));
  return <progress max={total} value={value} aria-label={props.label} />;
}

/** How often a running job is read again. */
const pollMs = 1_000;

/**
 * Follows a background job: `first` as answered when it was started, read
 * again every second while it runs. A failed read keeps the last state.
 */
export function useJob<T extends { state: JobState }>(first: T | undefined, read: (api: Api, job: T) => Promise<T>): T | undefined {
  const session = useSession();
  const [job, setJob] = useState(first);
  useEffect(() => setJob(first), [first]);
  useEffect(() => {
    if (!job || job.state !== JobState.RUNNING) return;
    let current = true;
    const timer = setTimeout(() => {
      read(session.api, job).then(
        (next) => current && setJob(next),
        () => current && setJob({ ...job }),
      );
    }, pollMs);
    return () => {
      current = false;
      clearTimeout(timer);
    };
  }, [job, read, session]);
  return job;
}
