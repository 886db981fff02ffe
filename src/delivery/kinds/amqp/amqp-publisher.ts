import { type ChannelModel, type ConfirmChannel, connect, type Message } from "amqplib";
import { guardedLookup, redact, refuseLiteralHost } from "../broker-address.js";
import { type Connected, createBrokerConnection } from "../broker-connection.js";
import type { BrokerCall, BrokerPublisher, PublisherContext, PublishResult } from "../broker-publisher.js";
import { awaitConfirms, causeOf, withTimeout } from "../broker-publisher.js";
import { amqpLimits, amqpRoutingKeyTemplate, type AmqpSettings } from "./amqp-settings.js";
import { coalesceFrameWrites } from "./frame-writes.js";

export interface AmqpPublisherOptions extends AmqpSettings, PublisherContext {}

/** An open connection and its confirm channel, with the publishes awaiting their confirm. */
interface Target {
  model: ChannelModel;
  channel: ConfirmChannel;
  pending: Set<Pending>;
  /** Set once the broker or the network ended it: the next publish opens a new one. */
  lost: string | undefined;
  /** Gives it up: fails what awaits a confirm, naming the cause, and lets the next publish open a new one. */
  lose(cause: string): void;
}

interface Pending {
  messageId: string;
  /** The broker returned it as unroutable (mandatory): its confirm then fails the attempt. */
  returned: string | undefined;
  settle(result: PublishResult): void;
}

/**
 * Publishes a destination's calls to an AMQP 0-9-1 broker (RabbitMQ) with
 * publisher confirms: a call is delivered once the broker confirms it. A
 * nack, a return (unroutable under `mandatory`), a lost connection or no
 * confirm in time fail the attempt naming the cause, retried on the normal
 * schedule. One connection and one confirm channel per publisher (one
 * publisher per destination and settings revision), opened on the first
 * publish and again after the broker drops it.
 */
export function createAmqpPublisher(options: AmqpPublisherOptions): BrokerPublisher {
  const routingKey = amqpRoutingKeyTemplate("routingKey", options.routingKey);
  const url = new URL(options.url);
  const where = `${url.hostname}:${url.port || (url.protocol === "amqps:" ? 5671 : 5672)}`;
  const secrets = [decodeURIComponent(url.password), url.password];
  const fail = (cause: string): PublishResult => ({ outcome: "retryable", error: `amqp: ${redact(cause, secrets)}` });

  async function openTarget(onLost: () => void): Promise<Target> {
    const refused = refuseLiteralHost(url.hostname, options.guard);
    if (refused) throw new Error(`refused: ${refused}`);
    const connecting = connect(options.url, {
      lookup: guardedLookup(options.guard),
      timeout: options.timeoutMs,
      noDelay: true,
      clientProperties: { connection_name: options.connectionName ?? "waypost" },
    });
    const model = await withTimeout(
      connecting,
      options.timeoutMs,
      () => new Error(`no connection within ${options.timeoutMs} ms`),
      (late) => void late.close().catch(() => {}),
    );
    const target: Target = { model, channel: undefined as never, pending: new Set(), lost: undefined, lose: (cause) => lose(cause) };
    const lose = (cause: string) => {
      if (target.lost !== undefined) return;
      target.lost = cause;
      onLost();
      const what = cause.startsWith("channel error") ? cause : `connection lost (${cause})`;
      for (const entry of target.pending) entry.settle(fail(`${what} before the broker confirmed`));
      target.pending.clear();
      options.logger?.warn({ broker: where, cause: redact(cause, secrets) }, "amqp connection lost; the next publish reopens it");
    };
    model.on("error", (error: unknown) => lose(causeOf(error)));
    model.on("close", (error?: unknown) => lose(error ? causeOf(error) : "closed by the broker"));
    model.on("blocked", (reason: string) => options.logger?.warn({ broker: where, reason }, "amqp broker blocked publishing"));
    // A publish round's messages go out in one socket write.
    coalesceFrameWrites(model);
    try {
      target.channel = await model.createConfirmChannel();
    } catch (error) {
      await model.close().catch(() => {});
      throw error;
    }
    target.channel.on("error", (error: unknown) => lose(`channel error: ${causeOf(error)}`));
    target.channel.on("close", () => {
      // When the connection goes, its channels close first: wait a turn for the connection to say why.
      setImmediate(() => {
        lose("channel closed");
        // A channel the broker closed (an exchange that does not exist) takes its connection along, so the next publish starts clean.
        void model.close().catch(() => {});
      });
    });
    target.channel.on("return", (message: Message) => {
      const messageId = message.properties.messageId as string | undefined;
      for (const entry of target.pending) {
        if (entry.messageId !== messageId || entry.returned !== undefined) continue;
        const { replyText, exchange, routingKey: key } = message.fields as unknown as Record<string, string>;
        entry.returned = `${replyText} exchange ${JSON.stringify(exchange)} routing key ${JSON.stringify(key)}`;
        break;
      }
    });
    return target;
  }

  /**
   * Publishes a round: every message in the same turn (one socket write),
   * one timer for the round's confirms. Each call settles on its own
   * confirm, nack or return; a round not confirmed in time fails what is
   * left of it and gives the connection up.
   */
  async function publishRound(calls: readonly BrokerCall[], connect: () => Promise<Connected<Target>>): Promise<PublishResult[]> {
    const results: PublishResult[] = new Array(calls.length);
    const keys: Array<string | undefined> = calls.map((call, i) => {
      const key = routingKey.render(call);
      if (Buffer.byteLength(key) <= amqpLimits.maxRoutingKeyLength) return key;
      results[i] = { outcome: "permanent", error: `amqp: routing key ${JSON.stringify(key.slice(0, 64))}… is longer than 255 bytes` };
      return undefined;
    });
    const failAll = (result: PublishResult) => {
      keys.forEach((key, i) => {
        if (key !== undefined) results[i] = result;
      });
    };
    if (!keys.some((key) => key !== undefined)) return results;
    const { connection: target, failure } = await connect();
    if (failure) {
      failAll(failure);
      return results;
    }
    const round = awaitConfirms<Pending>(results, options.timeoutMs, (waiting) => {
      const cause = `no confirm from the broker within ${options.timeoutMs} ms`;
      for (const entry of waiting) entry.settle(fail(cause));
      // A connection that confirms nothing (a dead peer the heartbeat has not caught yet, a
      // stalled route) is given up: the next publish opens a fresh one.
      target.lose(cause);
      void target.model.close().catch(() => {});
    });
    keys.forEach((key, i) => {
      if (key === undefined) return;
      const call = calls[i]!;
      const entry: Pending = {
        messageId: call.messageId,
        returned: undefined,
        settle(result) {
          if (round.settle(entry, i, result)) target.pending.delete(entry);
        },
      };
      round.add(entry);
      target.pending.add(entry);
      const confirmed = (error: unknown) => {
        if (!round.awaits(entry)) return;
        if (error && causeOf(error) === "message nacked") entry.settle(fail("nacked by the broker"));
        else if (error) {
          // amqplib fails unconfirmed messages with a bare "channel closed" before the connection
          // reports why: let that report (lose) settle them with the cause, this is the fallback.
          setImmediate(() => round.awaits(entry) && entry.settle(fail(target.lost ?? causeOf(error))));
        } else if (entry.returned !== undefined) entry.settle(fail(entry.returned));
        else entry.settle({ outcome: "success" });
      };
      try {
        target.channel.publish(options.exchange, key, Buffer.from(call.body), messageProperties(call, options.mandatory), confirmed);
      } catch (error) {
        // The channel closed under us (IllegalOperationError): the connection is gone.
        entry.settle(fail(`connection lost (${causeOf(error)})`));
      }
    });
    return round.published();
  }

  return createBrokerConnection({ open: openTarget, end: (target) => target.model.close(), fail, where, publishRound });
}

/** The AMQP properties of a call's message: what a consumer reads to route and de-duplicate it. */
function messageProperties(call: BrokerCall, mandatory: boolean) {
  const headers: Record<string, string> = {};
  if (call.traceparent) headers.traceparent = call.traceparent;
  if (call.tracestate) headers.tracestate = call.tracestate;
  return {
    mandatory,
    persistent: true,
    contentType: "application/json",
    messageId: call.messageId,
    // AMQP timestamps are whole seconds since the epoch.
    timestamp: Math.floor(call.timestamp.getTime() / 1000),
    type: call.type,
    appId: "waypost",
    headers,
  };
}
