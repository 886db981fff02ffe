import type { KindFlags } from "../destination-flag-types.js";
import { settingsFlags } from "./settings-flags.js";

/** A NATS JetStream cluster: its servers, subject template and credentials (masked when shown). */
export const natsFlags: KindFlags = {
  flags: [
    settingsFlags(
      "nats",
      [
        {
          key: "servers",
          flag: "--nats-server <url>",
          help: { create: "a NATS server: nats://host:4222 (repeat for up to 5; --kind nats)", update: "replaces the servers (repeat)" },
          repeat: true,
        },
        {
          key: "subject",
          flag: "--subject <template>",
          help: 'the subject: {type}, {event}, {sourceId}, {destinationId} (default "waypost.{type}")',
        },
        { key: "token", flag: "--nats-token <token>", help: "authenticate with a token" },
        { key: "user", flag: "--nats-user <user>", help: "authenticate with a user and --nats-password" },
        { key: "password", flag: "--nats-password <password>", help: "the user's password" },
      ],
      "stored",
    ),
  ],
  missing: (flags) => (flags.natsServer === undefined ? "--kind nats needs --nats-server" : undefined),
  target: (d) => (d.nats ? `${d.nats.servers.join(" ")} subject ${d.nats.subject}` : ""),
  details: (d) =>
    d.nats
      ? [
          ["servers", d.nats.servers.join(" ")] as const,
          ["subject", d.nats.subject] as const,
          ["credentials", d.nats.hasToken ? "token" : d.nats.user ? `user ${d.nats.user}` : "none"] as const,
        ]
      : [],
};
