// At most a few ingest requests worked on at once in one process; the rest
// wait their turn with their bodies read (a slow sender holds no turn) and
// not yet decoded.
//
// Why: Node runs every request's work on one event loop. Under saturating
// ingest, each Batch in progress queues milliseconds of decoding,
// validating and statement building ahead of whatever else arrives, and an
// admin request (the console, GetProfile) waits behind all of them: with 8
// Batch streams, 50 ms at p99 on the bench's two cores. A handful in
// progress keeps Postgres as busy (it is the slower half of a call), while
// an admin request waits behind that handful only. It also bounds the
// calls decoded at once, whatever the number of connections.

export interface IngestAdmission {
  /** Waits for a turn; the function it gives ends the turn (call it once, when the response is written). */
  enter(): Promise<() => void>;
  /** Requests in progress and waiting, for metrics and tests. */
  readonly inside: number;
  readonly waiting: number;
}

/** `slots`: requests in progress at once; 0 lets every request in at once (no waiting). */
export function createIngestAdmission(options: { slots: number }): IngestAdmission {
  const { slots } = options;
  const queue: Array<() => void> = [];
  let inside = 0;

  const release = () => {
    const next = queue.shift();
    if (next) next();
    else inside--;
  };
  const turn = () => {
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      release();
    };
  };

  return {
    enter() {
      if (slots === 0 || inside < slots) {
        inside++;
        return Promise.resolve(turn());
      }
      // The slot passes straight from the leaving request to the next: `inside` stays as it is.
      return new Promise((resolve) => queue.push(() => resolve(turn())));
    },
    get inside() {
      return inside;
    },
    get waiting() {
      return queue.length;
    },
  };
}
