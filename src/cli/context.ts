import { readFileSync } from "node:fs";
import { toJson, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import type { Command } from "commander";
import type { DescService } from "@bufbuild/protobuf";
import { adminTokenFile } from "../admin-token.js";
import { storedLoginToken } from "./stored-login.js";
import { UsageError } from "./errors.js";

/** Where the CLI writes and what it reads from its environment: injectable for tests. */
export interface CliIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  env: NodeJS.ProcessEnv;
}

/** The options every command has (declared on the program, see program.ts). */
export interface GlobalOptions {
  url: string;
  token?: string;
  json?: boolean;
}

/** What a command's action works with. */
export interface CliContext {
  json: boolean;
  /** The server's URL (--url), without a trailing slash: where a webhook source's inbound URL is. */
  serverUrl: string;
  /** A client of an admin service, with the admin token. */
  admin<S extends DescService>(service: S): Client<S>;
  /** A client with another bearer token (a write key). */
  withToken<S extends DescService>(service: S, token: string): Client<S>;
  /** With --json: the message's JSON form; otherwise `text()`. */
  print<D extends DescMessage>(schema: D, message: MessageShape<D>, text: () => string): void;
  /** One JSON document built by the command (several RPCs' answers), or text. */
  printJson(value: unknown, text: () => string): void;
  out(text: string): void;
  /** Writes text to stdout as it is, adding no newline (a file's bytes, such as a plan applied from git). */
  outExact(text: string): void;
  err(text: string): void;
  /** Writes as is (no newline added): a progress bar redrawn in place. */
  write(text: string): void;
  /** Whether stdout is a terminal (a progress bar is drawn in place) rather than a file or pipe. */
  tty: boolean;
  signal: AbortSignal;
}

/** Commands whose own --url is the server's (not those where --url is a webhook's). */
export const serverUrlCommands = new WeakSet<Command>();

/** The command's own --url/--token/--json, else the program's (which read the environment). */
function commonOptions(command: Command): GlobalOptions {
  let root = command;
  while (root.parent) root = root.parent;
  const own = command.opts<Partial<GlobalOptions>>();
  const program = root.opts<GlobalOptions>();
  return {
    url: (serverUrlCommands.has(command) ? own.url : undefined) ?? program.url,
    token: own.token ?? program.token,
    json: own.json ?? program.json,
  };
}

export function createContext(command: Command, io: CliIo, signal: AbortSignal): CliContext {
  const options = commonOptions(command);
  const baseUrl = checkUrl(options.url);
  let adminToken: string | undefined;
  const bearer =
    (token: () => string): Interceptor =>
    (next) =>
    (req) => {
      req.header.set("authorization", `Bearer ${token()}`);
      return next(req);
    };
  const client = <S extends DescService>(service: S, token: () => string) =>
    createClient(service, createConnectTransport({ baseUrl, httpVersion: "1.1", interceptors: [bearer(token)] }));
  const write = (stream: NodeJS.WritableStream, text: string) => {
    stream.write(text.endsWith("\n") ? text : `${text}\n`);
  };
  return {
    json: options.json === true,
    serverUrl: baseUrl,
    admin: (service) => client(service, () => (adminToken ??= resolveToken(options.token, io.env, baseUrl))),
    withToken: (service, token) => client(service, () => token),
    print(schema, message, text) {
      if (options.json) write(io.stdout, JSON.stringify(toJson(schema, message), null, 2));
      else write(io.stdout, text());
    },
    printJson(value, text) {
      if (options.json) write(io.stdout, JSON.stringify(value, null, 2));
      else write(io.stdout, text());
    },
    out: (text) => write(io.stdout, text),
    outExact: (text) => {
      io.stdout.write(text);
    },
    err: (text) => write(io.stderr, text),
    write: (text) => io.stdout.write(text),
    tty: (io.stdout as { isTTY?: boolean }).isTTY === true,
    signal,
  };
}

function checkUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`--url: "${url}" is not a URL (like http://127.0.0.1:8080)`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw new UsageError(`--url: must be http:// or https://`);
  return url.replace(/(?<!\/)\/+$/, "");
}

/**
 * --token, else WAYPOST_ADMIN_TOKEN (commander reads both into `flag`), else
 * the token `waypost login` kept for this server while it has not expired,
 * else the token file the server keeps in its data directory.
 */
function resolveToken(flag: string | undefined, env: NodeJS.ProcessEnv, serverUrl: string): string {
  if (flag) return flag;
  if (env.WAYPOST_ADMIN_TOKEN) return env.WAYPOST_ADMIN_TOKEN;
  const login = storedLoginToken(env, serverUrl, new Date());
  if (login) return login;
  const file = adminTokenFile(env.WAYPOST_DATA_DIR ?? ".waypost");
  try {
    const token = readFileSync(file, "utf8").trim();
    if (token) return token;
  } catch {
    // Reported below.
  }
  throw new UsageError(
    `no admin token: run waypost login, pass --token, set WAYPOST_ADMIN_TOKEN, or run where the server keeps ${file} (set WAYPOST_DATA_DIR)`,
  );
}

/**
 * Wires an action into commander: the context is built from the command's
 * options; the action gets commander's arguments (positionals, then options).
 */
// biome-ignore lint/suspicious/noExplicitAny: commander's action arguments are untyped; each action declares its own
export type Wire = (action: (ctx: CliContext, ...args: any[]) => Promise<void>) => (...args: unknown[]) => Promise<void>;
