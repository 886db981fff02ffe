import { DestinationKind } from "../../../gen/waypost/v1/destination_pb.js";

/**
 * What clients know of a kind: its stored name, its proto value and how
 * people are shown it. No server code: the CLI and the console's browser
 * bundle import this list (its order and names match registry.ts, which a
 * test checks), and key their per-kind flags and form fields by `name`.
 */
export interface KindDescriptor {
  name: string;
  proto: DestinationKind;
  /** In the console's kind menu. */
  title: string;
  /** What `--kind NAME` does, in the CLI's help. */
  summary: string;
}

export const kindDescriptors = [
  { name: "webhook", proto: DestinationKind.WEBHOOK, title: "Webhooks", summary: "POST calls to --url" },
  { name: "postgres", proto: DestinationKind.POSTGRES, title: "Postgres warehouse", summary: "load them into warehouse tables" },
  { name: "amqp", proto: DestinationKind.AMQP, title: "AMQP (RabbitMQ)", summary: "publish them to --amqp-url" },
  { name: "nats", proto: DestinationKind.NATS, title: "NATS JetStream", summary: "publish them to --nats-server" },
  {
    name: "integration",
    proto: DestinationKind.INTEGRATION,
    title: "Integration (vendor tool)",
    summary: "send them to a vendor tool of the catalog (--integration SLUG)",
  },
  {
    name: "lake",
    proto: DestinationKind.LAKE,
    title: "Lake (Parquet files in S3)",
    summary: "write them as Parquet files to --lake-url (s3://bucket/prefix or file:///dir)",
  },
] as const satisfies readonly KindDescriptor[];

/** The kinds' names: what per-kind tables (CLI flags, console fields) are keyed by, so a missing kind does not compile. */
export type KindName = (typeof kindDescriptors)[number]["name"];

/** The kind a Destination message names (unspecified reads as the first, webhooks, as the server treats it). */
export function descriptorOfProto(value: DestinationKind): KindDescriptor & { name: KindName } {
  return kindDescriptors.find((kind) => kind.proto === value) ?? kindDescriptors[0];
}

/** The kind with this name, or undefined. */
export function descriptorNamed(name: string): (KindDescriptor & { name: KindName }) | undefined {
  return kindDescriptors.find((kind) => kind.name === name);
}
