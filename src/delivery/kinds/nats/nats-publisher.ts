import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { connect, createInbox, headers, type Msg, type NatsConnection } from "@nats-io/transport-node";
import type { AddressGuard } from "../../../outbound/address-guard.js";
import { redact, refuseLiteralHost } from "../broker-address.js";
import { type Connected, createBrokerConnection } from "../broker-connection.js";
import type { BrokerCall, BrokerPublisher, PublisherContext, PublishResult } from "../broker-publisher.js";
import { awaitConfirms, causeOf, withTimeout } from "../broker-publisher.js";
import { natsSubjectTemplate, type NatsSettings } from "./nats-settings.js";

export interface NatsPublisherOptions extends NatsSettings, PublisherContext {}

interface Target {
  nc: NatsConnection;
  /** The reply subjects' prefix: JetStream acknowledges each message to `<inbox>.<n>`. */
  inbox: string;
  next: number;
  /** The messages awaiting their acknowledgement, by the token of their reply subject. */
  pending: Map<string, Pending>;
  lost: string | undefined;
}

interface Pending {
  subject: string;
  settle(result: PublishResult): void;
}

/**
 * Publishes a destination's calls to NATS JetStream: a call is delivered
 * once the stream acknowledges it. `Nats-Msg-Id` carries the messageId, so
 * the stream's duplicate window drops a resend. No stream for the subject,
 * no acknowledgement in time and a lost connection fail the attempt naming
 * the cause, retried on the normal schedule. One connection per publisher
 * (one publisher per destination and settings revision), opened on the
 * first publish and again after it is lost; the client's own reconnecting
 * is off so that every connection passes the address guard first, and the
 * servers a cluster announces are ignored for the same reason.
 */
export function createNatsPublisher(options: NatsPublisherOptions): BrokerPublisher {
  const subject = natsSubjectTemplate("subject", options.subject);
  const secrets = [options.token, options.password];
  const tls = options.servers.some((server) => server.startsWith("tls:"));
  const fail = (cause: string): PublishResult => ({ outcome: "retryable", error: `nats: ${redact(cause, secrets)}` });

  async function openTarget(onLost: () => void): Promise<Target> {
    const servers = await guardedServers(options.servers, options.guard, tls);
    const nc = await withTimeout(
      connect({
        servers,
        name: options.connectionName ?? "waypost",
        timeout: options.timeoutMs,
        reconnect: false,
        ignoreClusterUpdates: true,
        // Otherwise every request builds two Error objects up front for their stack traces: about a
        // third of the client's CPU per publish, for stacks no attempt record shows.
        noAsyncTraces: true,
        ...(tls ? { tls: {} } : {}),
        ...(options.token ? { token: options.token } : {}),
        ...(options.user ? { user: options.user, pass: options.password } : {}),
      }),
      options.timeoutMs,
      () => new Error(`no connection within ${options.timeoutMs} ms`),
      (late) => void late.close().catch(() => {}),
    );
    const target: Target = { nc, inbox: createInbox(), next: 0, pending: new Map(), lost: undefined };
    // One subscription for every acknowledgement of the connection, rather than the client's
    // request per message (a timer, a subscription entry and a RequestError built per message).
    nc.subscribe(`${target.inbox}.*`, { callback: (_error, msg) => acknowledged(target, msg) });
    void nc.closed().then((error) => {
      if (target.lost !== undefined) return;
      target.lost = error ? causeOf(error) : "closed by the server";
      onLost();
      for (const entry of [...target.pending.values()])
        entry.settle(fail(`connection lost (${target.lost}) before JetStream acknowledged`));
      options.logger?.warn({ cause: redact(target.lost, secrets) }, "nats connection lost; the next publish reopens it");
    });
    return target;
  }

  /**
   * Publishes a round: every message in the same turn, so the client writes
   * them in one go (it flushes what a turn queued at once); each call
   * settles on its own acknowledgement.
   */
  async function publishRound(calls: readonly BrokerCall[], connect: () => Promise<Connected<Target>>): Promise<PublishResult[]> {
    const { connection: target, failure } = await connect();
    if (failure) return calls.map(() => failure);
    const round = awaitConfirms<Pending>(new Array(calls.length), options.timeoutMs, (waiting) => {
      for (const entry of waiting) {
        entry.settle(fail(`no acknowledgement from JetStream within ${options.timeoutMs} ms on subject ${JSON.stringify(entry.subject)}`));
      }
    });
    calls.forEach((call, i) => {
      const token = String(target.next++);
      const entry: Pending = {
        subject: subject.render(call),
        settle(result) {
          if (round.settle(entry, i, result)) target.pending.delete(token);
        },
      };
      round.add(entry);
      target.pending.set(token, entry);
      const h = headers();
      h.set("Nats-Msg-Id", call.messageId);
      if (call.traceparent) h.set("traceparent", call.traceparent);
      if (call.tracestate) h.set("tracestate", call.tracestate);
      try {
        target.nc.publish(entry.subject, call.body, { reply: `${target.inbox}.${token}`, headers: h });
      } catch (error) {
        entry.settle(fail(`connection lost (${target.lost ?? causeOf(error)}) before JetStream acknowledged`));
      }
    });
    return round.published();
  }

  /** JetStream's answer to one message: its ack (also as a duplicate), its refusal, or no responders (no stream). */
  function acknowledged(target: Target, msg: Msg) {
    const token = msg.subject.slice(target.inbox.length + 1);
    const entry = target.pending.get(token);
    if (!entry) return;
    if (msg.data.length === 0 && msg.headers?.code === 503) {
      entry.settle(fail(`no stream matches subject ${JSON.stringify(entry.subject)} (no responders)`));
      return;
    }
    let answer: { error?: { description?: string; code?: number } } | undefined;
    try {
      answer = msg.json();
    } catch {
      answer = undefined;
    }
    // A duplicate ack (a resend inside the duplicate window) is delivered too: the stream holds it once.
    if (answer && !answer.error) entry.settle(delivered);
    else {
      const cause = answer?.error?.description ?? `an answer that is no acknowledgement (${msg.headers?.code ?? "no status"})`;
      entry.settle(fail(`${cause} (subject ${JSON.stringify(entry.subject)})`));
    }
  }

  const where = options.servers.join(", ");
  return createBrokerConnection({ open: openTarget, end: (target) => target.nc.close(), fail, where, publishRound });
}

const delivered: PublishResult = { outcome: "success" };

/**
 * The servers to dial, after the address guard passed every address they
 * resolve to. Plain servers are dialled at the checked addresses, so a name
 * cannot resolve elsewhere in between; TLS servers keep their names (the
 * certificate is checked against them), and a handshake with a host that
 * has no certificate for the name fails before anything is sent.
 */
async function guardedServers(servers: readonly string[], guard: AddressGuard, tls: boolean): Promise<string[]> {
  const dial: string[] = [];
  for (const server of servers) {
    const url = new URL(server);
    const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
    const port = url.port || "4222";
    const literal = refuseLiteralHost(url.hostname, guard);
    if (literal) throw new Error(`refused: ${literal}`);
    if (isIP(host) !== 0) {
      dial.push(`${url.hostname}:${port}`);
      continue;
    }
    const addresses = await lookup(host, { all: true });
    for (const { address } of addresses) {
      const reason = guard.refuse(address);
      if (reason) throw new Error(`refused: ${host} resolves to ${reason}`);
    }
    if (tls) dial.push(`${url.hostname}:${port}`);
    else for (const { address, family } of addresses) dial.push(family === 6 ? `[${address}]:${port}` : `${address}:${port}`);
  }
  return dial;
}
