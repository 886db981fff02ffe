import { InvalidInputError, requireId } from "../errors.js";
import type { StageChunk } from "./member-chunks.js";

/** What every streaming sync request has: the audience, named in the first message. */
interface StreamRequest {
  audienceId: string;
}

export interface OpenedStream<M extends StreamRequest> {
  /** The first request message; its audienceId names the audience. */
  first: M;
  /**
   * Every message (the first included) turned into stage chunks, pulled one
   * at a time: the next request message is read only when the previous one's
   * chunks have been consumed (staged). `toChunks` gets a suffix for error
   * messages that says which stream message (1-based) a field is in.
   */
  chunks(audienceId: string, toChunks: (message: M, where: string) => Iterable<StageChunk>): AsyncIterable<StageChunk>;
}

/**
 * Reads the first message of a client stream (it must name the audience) and
 * leaves the rest unread until the chunks are pulled.
 */
export async function openStream<M extends StreamRequest>(requests: AsyncIterable<M>): Promise<OpenedStream<M>> {
  const iterator = requests[Symbol.asyncIterator]();
  const head = await iterator.next();
  if (head.done) throw new InvalidInputError("audienceId", "is required (the stream had no message)");
  const first = head.value;
  if (first.audienceId === "") throw new InvalidInputError("audienceId", "is required in the first message");
  return {
    first,
    async *chunks(audienceId, toChunks) {
      let message: M = first;
      for (let number = 1; ; number++) {
        // Later messages may repeat the audience, but not name another one.
        if (number > 1 && message.audienceId !== "" && requireId("audienceId", message.audienceId) !== audienceId) {
          throw new InvalidInputError("audienceId", `stream message ${number} names another audience than the first`);
        }
        yield* toChunks(message, ` (stream message ${number})`);
        const next = await iterator.next();
        if (next.done) return;
        message = next.value;
      }
    },
  };
}
