import type { ChannelModel } from "amqplib";

/** The part of amqplib's connection this reaches into: its frame multiplexer, which writes each frame to the socket. */
interface Muxed {
  connection?: { muxer?: { out?: { write(chunk: Buffer): boolean } } };
}

/**
 * Makes the frames the connection writes in one turn of the event loop one
 * socket write. amqplib writes each message's frames with a write of their
 * own, a syscall each (and, on loopback, a wake-up of the broker each): at
 * 64 messages in flight that was half of a publish's CPU. A publish round
 * writes all its messages in one turn, so it becomes one write. The socket's
 * own backpressure is not consulted: what is buffered is bounded by the
 * calls the delivery loop has in flight. Returns false (writes unchanged)
 * when the connection is not shaped as expected (another amqplib version).
 */
export function coalesceFrameWrites(model: ChannelModel): boolean {
  const muxer = (model as unknown as Muxed).connection?.muxer;
  const socket = muxer?.out;
  if (!muxer || !socket || typeof socket.write !== "function") return false;
  let chunks: Buffer[] = [];
  const flush = () => {
    const out = chunks;
    chunks = [];
    socket.write(out.length === 1 ? out[0]! : Buffer.concat(out));
  };
  muxer.out = {
    write(chunk) {
      if (chunks.push(chunk) === 1) queueMicrotask(flush);
      return true;
    },
  };
  return true;
}
