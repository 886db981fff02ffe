import { useState } from "preact/hooks";
import { DeliveryStatus, type RetryJob } from "../../../../gen/waypost/v1/delivery_pb.js";
import { JobState } from "../../../../gen/waypost/v1/job_pb.js";
import type { Api } from "../api.js";
import { ErrorMessage } from "../components.js";
import { useAction } from "../context.js";
import { filterToRequest, statusOf, type DeliveryFilter } from "../delivery-filter.js";
import { JobProgress, jobStateLabels, useJob } from "../job-progress.js";

const replayable = new Set([DeliveryStatus.FAILED, DeliveryStatus.EXPIRED, DeliveryStatus.RETRYING]);

const readJob = async (api: Api, job: RetryJob) => (await api.deliveries.getRetryJob({ id: job.id })).job ?? job;

/** What a retry job has done, in words. */
function describeJob(job: RetryJob): string {
  const skipped =
    job.notReplayable > 0n ? ` ${job.notReplayable} could not be replayed: their messages are past the retention period.` : "";
  const ended = job.state === JobState.RUNNING ? "" : ` ${jobStateLabels[job.state]}${job.error ? `: ${job.error}` : ""}.`;
  return `Retried ${job.retried} of ${job.matched} matching deliveries.${ended}${skipped}`;
}

/**
 * Replays every delivery the filter matches (failed and expired ones, or
 * the filtered status), as a job on the server, whose progress it shows.
 * It needs one destination: a bulk replay never spans destinations by accident.
 */
export function RetryAllMatching(props: { filter: DeliveryFilter; onQueued(): void }) {
  const action = useAction();
  const [started, setStarted] = useState<RetryJob | undefined>();
  const job = useJob(started, readJob);
  const status = statusOf(props.filter.status);
  const reason = !props.filter.destination
    ? "Choose a destination to retry its matching deliveries."
    : status !== undefined && !replayable.has(status)
      ? "Only failed, expired or retrying deliveries can be retried."
      : undefined;

  async function retryAll() {
    setStarted(undefined);
    const { destinationId, messageId, userId, since, until } = filterToRequest(props.filter);
    const statuses = status !== undefined ? [status] : [];
    const what = status !== undefined ? props.filter.status : "failed and expired";
    const response = await action.confirmRun(`Retry every ${what} delivery matching this filter?`, (api) =>
      api.deliveries.retryDeliveries({ destinationId, statuses, messageId, userId, since, until }),
    );
    if (!response?.job) return;
    setStarted(response.job);
    props.onQueued();
  }

  return (
    <div class="retry-all">
      <button type="button" disabled={reason !== undefined || action.busy} aria-describedby="retry-all-hint" onClick={retryAll}>
        Retry all matching
      </button>
      <span id="retry-all-hint" class="hint">
        {reason ?? "Replays the failed and expired deliveries this filter matches (or those of the chosen status)."}
      </span>
      {job && (
        <p role="status" class="ok">
          <JobProgress state={job.state} done={job.retried} total={job.matched} label="Retry progress" /> {describeJob(job)}
        </p>
      )}
      <ErrorMessage error={action.error} />
    </div>
  );
}
