import type { PreparedCall } from "./validate-call.js";
import type { AnyCall } from "./types.js";

/** A call waiting in memory, with its place in the order of calls. */
export interface QueuedCall extends PreparedCall {
  /** Increasing per client; `flush()` waits for every call up to a number. */
  seq: number;
  /** The caller's object, handed back to the callbacks. */
  call: AnyCall;
  /** The trace context active when the call was made. */
  traceparent?: string | undefined;
}

/**
 * A FIFO of calls not yet sent, with their count and total size. Array plus
 * head index, compacted now and then, so that push and shift stay O(1)
 * amortised without a linked list's allocation per call.
 */
export class CallQueue {
  private items: QueuedCall[] = [];
  private head = 0;
  /** Sum of `bytes` of the queued calls. */
  bytes = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(call: QueuedCall): void {
    this.items.push(call);
    this.bytes += call.bytes;
  }

  peek(): QueuedCall | undefined {
    return this.items[this.head];
  }

  shift(): QueuedCall | undefined {
    const call = this.items[this.head];
    if (call === undefined) return undefined;
    this.items[this.head] = undefined as unknown as QueuedCall; // let it be collected
    this.head++;
    this.bytes -= call.bytes;
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return call;
  }

  /** Removes and returns every queued call. */
  drain(): QueuedCall[] {
    const rest = this.items.slice(this.head);
    this.items = [];
    this.head = 0;
    this.bytes = 0;
    return rest;
  }
}
