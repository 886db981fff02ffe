import { type SettingField, SettingsFieldset } from "../views/settings-fieldset.js";
import type { KindForm } from "./kind-form.js";
import { brokerWording, Target, templateHint } from "./target.js";

/** A NATS JetStream destination's part of the form: the servers (one a line), subject template and credentials ("***" on edit when set). */
export type NatsDraft = { servers: string; subject: string; token: string; user: string; password: string };

// The credentials are write-only: shown as *** once set, and *** sent back keeps them.
const fields: ReadonlyArray<SettingField<NatsDraft>> = [
  {
    key: "servers",
    field: "nats.servers",
    label: "Servers",
    placeholder: "nats://host:4222",
    hint: "One URL a line, up to 5, of one cluster.",
    input: "lines",
    parts: true,
  },
  { key: "subject", field: "nats.subject", label: "Subject", placeholder: "waypost.{type}", hint: templateHint },
  { key: "token", field: "nats.token", label: "Token", hint: "Or a user and password.", input: "secret" },
  { key: "user", field: "nats.user", label: "User" },
  { key: "password", field: "nats.password", label: "Password", input: "secret" },
];

const lines = (text: string) =>
  text
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "");

export const natsForm: KindForm<NatsDraft> = {
  draft: (destination) => ({
    servers: destination?.nats?.servers.join("\n") ?? "",
    subject: destination?.nats?.subject ?? "",
    token: destination?.nats?.token ?? "",
    user: destination?.nats?.user ?? "",
    password: destination?.nats?.password ?? "",
  }),
  request: (draft) => ({
    fields: {
      nats: {
        servers: lines(draft.servers),
        subject: draft.subject.trim(),
        token: draft.token,
        user: draft.user.trim(),
        password: draft.password,
      },
    },
    paths: ["nats"],
  }),
  Fields: (props) => <SettingsFieldset legend="NATS JetStream" fields={fields} {...props} />,
  Where: ({ destination: { nats } }) => <Target address={nats?.servers.join(" ")} parts={[["subject", nats?.subject ?? ""]]} />,
  tell: (d) => (d.nats ? `subject ${d.nats.subject}` : ""),
  ...brokerWording,
};
