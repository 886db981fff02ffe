import { settingsKind } from "./settings-kind.js";

/** A NATS JetStream cluster: its servers, subject template and credentials (masked when shown). */
export const natsFlags = settingsKind({
  message: "nats",
  keep: "stored",
  address: {
    key: "servers",
    flag: "--nats-server <url>",
    help: { create: "a NATS server: nats://host:4222 (repeat for up to 5; --kind nats)", update: "replaces the servers (repeat)" },
    repeat: true,
  },
  others: [
    {
      key: "subject",
      flag: "--subject <template>",
      help: 'the subject: {type}, {event}, {sourceId}, {destinationId} (default "waypost.{type}")',
    },
    { key: "token", flag: "--nats-token <token>", help: "authenticate with a token" },
    { key: "user", flag: "--nats-user <user>", help: "authenticate with a user and --nats-password" },
    { key: "password", flag: "--nats-password <password>", help: "the user's password" },
  ],
  target: (nats) => `${nats.servers.join(" ")} subject ${nats.subject}`,
  details: (nats) => [
    ["servers", nats.servers.join(" ")],
    ["subject", nats.subject],
    ["credentials", nats.hasToken ? "token" : nats.user ? `user ${nats.user}` : "none"],
  ],
});
