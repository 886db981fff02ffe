import { obtainTransport, trackingClientFor, type OwnedTransport, type TransportFactory } from "./auth-transport.js";
import { createClientLog, type ClientLog } from "./debug-log.js";
import { Dispatcher } from "./dispatcher.js";
import { resolveOptions, type AnalyticsOptions } from "./options.js";
import type { QueuedCall } from "./queue.js";
import { Reporter } from "./reporter.js";
import { loadedOpenTelemetryReader, loadOpenTelemetryReader, type TraceparentReader } from "./trace-context.js";
import { defaultMaxBatchBytes } from "./split.js";
import type { AliasCall, CallInputs, CallType, GroupCall, IdentifyCall, PageCall, ScreenCall, TrackCall } from "./types.js";
import { prepareCall } from "./validate-call.js";

/** Options of `close()`. */
export interface CloseOptions {
  /** Overrides `closeTimeout` (ms) for this call. */
  timeout?: number;
}

const newMessageId = (): string => globalThis.crypto.randomUUID();

/**
 * The batching client, shared by the Node and the browser entry points,
 * which differ only in their default transport. Use `Analytics` from
 * `@waypost/client` (Node) or `@waypost/client/browser`.
 *
 * Each call method validates the call, queues it and returns its messageId
 * without waiting for the network; batches are sent in the background.
 * Invalid calls throw an `InvalidCallError` naming the field.
 */
export class AnalyticsClient {
  private readonly dispatcher: Dispatcher;
  private readonly owned: OwnedTransport;
  private readonly log: ClientLog;
  private readonly closeTimeoutMs: number;
  private closing: Promise<void> | undefined;
  private readTraceparent: TraceparentReader | undefined;

  constructor(options: AnalyticsOptions, transportFactory: TransportFactory) {
    const resolved = resolveOptions(options);
    if (typeof options.traceparent === "function") this.readTraceparent = options.traceparent;
    else if (options.traceparent !== false) this.useOpenTelemetry();
    this.log = createClientLog({ debug: options.debug, sink: options.logger });
    this.owned = obtainTransport(transportFactory, options);
    const client = trackingClientFor(this.owned.transport, resolved.writeKey);
    this.closeTimeoutMs = resolved.closeTimeoutMs;
    this.dispatcher = new Dispatcher({
      sendBatch: (request, callOptions) => client.batch(request, callOptions),
      flushAt: resolved.flushAt,
      flushIntervalMs: resolved.flushIntervalMs,
      maxQueueSize: resolved.maxQueueSize,
      maxConcurrentRequests: resolved.maxConcurrentRequests,
      maxBatchBytes: defaultMaxBatchBytes,
      requestTimeoutMs: resolved.requestTimeoutMs,
      retry: resolved.retry,
      reporter: new Reporter({ onSuccess: options.onSuccess, onFailure: options.onFailure, log: this.log }),
      log: this.log,
    });
    this.log.debug(
      `client for ${resolved.endpoint}: flushAt ${resolved.flushAt}, flushInterval ${resolved.flushIntervalMs} ms, ` +
        `maxQueueSize ${resolved.maxQueueSize}, maxRetries ${resolved.retry.maxRetries}`,
    );
  }

  /** Ties a user to their traits (Go: `client.Identify`). Returns the messageId. */
  identify(call: IdentifyCall): string {
    return this.enqueue("identify", call);
  }

  /** Records an action the user performed (Go: `client.Track`). Returns the messageId. */
  track(call: TrackCall): string {
    return this.enqueue("track", call);
  }

  /** Records a page view (Go: `client.Page`). Returns the messageId. */
  page(call: PageCall): string {
    return this.enqueue("page", call);
  }

  /** Records a screen view in a mobile app. Returns the messageId. */
  screen(call: ScreenCall): string {
    return this.enqueue("screen", call);
  }

  /** Ties a user to a group (Go: `client.Group`). Returns the messageId. */
  group(call: GroupCall): string {
    return this.enqueue("group", call);
  }

  /** Merges a previous id into a user id (Go: `client.Alias`). Returns the messageId. */
  alias(call: AliasCall): string {
    return this.enqueue("alias", call);
  }

  /**
   * Sends everything queued now, without waiting for `flushAt` or the flush
   * interval, and resolves when every call made before it is acknowledged
   * or has failed (retries included). Never rejects: outcomes go to the
   * callbacks.
   */
  flush(): Promise<void> {
    return this.dispatcher.flush();
  }

  /**
   * Stops accepting calls (later calls throw), sends everything held,
   * including batches waiting for a retry, and releases the connection.
   * Calls still not acknowledged after the timeout (`closeTimeout`, default
   * 30 s) are reported to `onFailure` with reason `closed`. Idempotent.
   * (Go: `client.Close()`.)
   */
  close(options: CloseOptions = {}): Promise<void> {
    if (!this.closing) {
      const timeout = options.timeout ?? this.closeTimeoutMs;
      this.log.debug(`closing with ${this.dispatcher.size} calls held; waiting up to ${timeout} ms`);
      this.closing = this.dispatcher.drain(timeout).finally(() => {
        this.owned.release();
        this.log.debug("closed");
      });
    }
    return this.closing;
  }

  /** Calls held in memory: queued, in flight and waiting for a retry. */
  get pendingCalls(): number {
    return this.dispatcher.size;
  }

  /** True once `close()` was called. */
  get closed(): boolean {
    return this.closing !== undefined;
  }

  /**
   * Reads the active OpenTelemetry context when @opentelemetry/api is
   * installed. The first client of a process imports it: its calls made
   * before the import settles (a few ticks) carry no context.
   */
  private useOpenTelemetry(): void {
    const loaded = loadedOpenTelemetryReader();
    if (loaded) {
      this.readTraceparent = loaded.reader;
      return;
    }
    void loadOpenTelemetryReader().then((reader) => {
      this.readTraceparent ??= reader;
    });
  }

  private enqueue<T extends CallType>(type: T, call: CallInputs[T]): string {
    if (this.closing) {
      throw new Error(`analytics.${type}() was called after close(): this client no longer accepts calls`);
    }
    const prepared = prepareCall(type, call, newMessageId);
    const queued: QueuedCall = {
      type,
      messageId: prepared.messageId,
      json: prepared.json,
      bytes: prepared.bytes,
      seq: 0,
      call,
      traceparent: this.readTraceparent?.(),
    };
    this.dispatcher.enqueue(queued);
    if (this.log.debugEnabled) this.log.debug(`queued ${type} ${prepared.messageId} (${prepared.bytes} bytes)`);
    return prepared.messageId;
  }
}
