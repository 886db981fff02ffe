import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { RetryJobSchema, type RetryJob } from "../../gen/waypost/v1/delivery_pb.js";
import { BackfillSchema, type Backfill } from "../../gen/waypost/v1/destination_pb.js";
import { JobState } from "../../gen/waypost/v1/job_pb.js";
import type { JobRow, JobState as StoredState } from "../db/queries/background-jobs.js";
import type { BackfillParams, BackfillProgress } from "../delivery/backfill-job.js";
import type { RetryProgress } from "../delivery/retry-job.js";

const states: Record<StoredState, JobState> = {
  running: JobState.RUNNING,
  done: JobState.DONE,
  cancelled: JobState.CANCELLED,
  failed: JobState.FAILED,
};

function common(row: JobRow) {
  return {
    id: row.id,
    destinationId: row.destination_id,
    state: states[row.state],
    error: row.error ?? "",
    createTime: timestampFromDate(row.created_at),
    ...(row.finished_at ? { finishTime: timestampFromDate(row.finished_at) } : {}),
  };
}

/** Counters of a job's progress (the kind's own JSON), as the proto's 64-bit integers. */
function counters<P>(progress: JobRow["progress"], keys: ReadonlyArray<keyof P & string>): Record<keyof P & string, bigint> {
  return Object.fromEntries(keys.map((key) => [key, BigInt(progress[key]!)])) as Record<keyof P & string, bigint>;
}

export function backfillToProto(row: JobRow): Backfill {
  const params = row.params as unknown as BackfillParams;
  return create(BackfillSchema, {
    ...common(row),
    ...counters<BackfillProgress>(row.progress, ["candidates", "created", "filtered"]),
    since: timestampFromDate(new Date(params.since)),
    until: timestampFromDate(new Date(params.until)),
    fromArchive: params.fromArchive ?? "",
    archiveCallsRead: BigInt(row.progress.read ?? 0),
  });
}

export function retryJobToProto(row: JobRow): RetryJob {
  return create(RetryJobSchema, { ...common(row), ...counters<RetryProgress>(row.progress, ["matched", "retried", "notReplayable"]) });
}
