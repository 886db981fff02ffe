import { Command, CommanderError, Option } from "commander";
import { modulesFor } from "./command-modules.js";
import { createContext, serverUrlCommands, type CliIo, type Wire } from "./context.js";
import { CommandFailure, describeRpcError, UsageError } from "./errors.js";

/**
 * The `waypost` program for a command line. Every command has --url, --token
 * and --json (on the program, so they may come anywhere on the line) and
 * --help. Only the commands the line may run are loaded (command-modules.ts).
 */
export async function createProgram(argv: readonly string[], io: CliIo, signal: AbortSignal): Promise<Command> {
  const program = new Command("waypost")
    .description(
      "Drive a running Waypost: sources, webhook requests, destinations, deliveries, stats, audiences, profiles, deletions, tracking plans, tokens, users, the audit log.",
    )
    .addOption(new Option("--url <url>", "the Waypost server").env("WAYPOST_URL").default("http://127.0.0.1:8080"))
    .addOption(
      new Option(
        "--token <token>",
        "the admin token or an API token wpt_... (default: the token file in WAYPOST_DATA_DIR, ./.waypost)",
      ).env("WAYPOST_ADMIN_TOKEN"),
    )
    .option("--json", "print the RPC response as one JSON document")
    .enablePositionalOptions()
    .configureHelp({ sortSubcommands: false })
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
    })
    .exitOverride()
    .showHelpAfterError("(add --help for usage)");
  // Commands with subcommands and no action of their own show their help (a usage error).
  const wire: Wire =
    (action) =>
    async (...args: unknown[]) => {
      const command = args[args.length - 1] as Command;
      await action(createContext(command, io, signal), ...args.slice(0, -1));
    };
  const registers = await Promise.all(modulesFor(argv).map((module) => module.load()));
  for (const register of registers) register(program, wire, io);
  addCommonOptions(program);
  return program;
}

/**
 * Gives every command --url, --token and --json of its own, so they may come
 * anywhere on the line. Program-level values (and WAYPOST_URL,
 * WAYPOST_ADMIN_TOKEN) are the fallback: see createContext. A command with a
 * --url of its own (destinations create/update: the webhook URL) takes the
 * server's from before the command name or from WAYPOST_URL.
 */
function addCommonOptions(command: Command): void {
  for (const sub of command.commands) {
    if (sub.commands.length > 0) {
      addCommonOptions(sub);
      continue;
    }
    // serve runs the service itself, backup and restore reach its database; send authenticates with a write key.
    if (["help", "serve", "backup", "restore"].includes(sub.name())) continue;
    const has = (flag: string) => sub.options.some((o) => o.long === flag);
    if (!has("--url")) {
      sub.option("--url <url>", "the Waypost server (env WAYPOST_URL; default http://127.0.0.1:8080)");
      serverUrlCommands.add(sub);
    }
    // send takes it too, unused, so that a line of common flags works after any command.
    const token =
      sub.name() === "send"
        ? "not used: send authenticates with --write-key"
        : "the admin token or an API token wpt_... (env WAYPOST_ADMIN_TOKEN; default: the token file in WAYPOST_DATA_DIR, ./.waypost)";
    sub.option("--token <token>", token);
    sub.option("--json", "print the RPC response as one JSON document");
  }
}

/** Runs the CLI; resolves to the exit code: 0 success, 1 RPC error, 2 usage error. */
export async function runCli(argv: readonly string[], io: CliIo, signal: AbortSignal): Promise<number> {
  try {
    const program = await createProgram(argv, io, signal);
    await program.parseAsync([...argv], { from: "user" });
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help asked for, or the version: success. Anything else commander
      // refused (unknown option, missing argument, no subcommand) is usage.
      return error.code === "commander.helpDisplayed" || error.code === "commander.version" ? 0 : 2;
    }
    if (error instanceof UsageError) {
      io.stderr.write(`waypost: ${error.message}\n(add --help for usage)\n`);
      return 2;
    }
    io.stderr.write(`waypost: ${error instanceof CommandFailure ? error.message : describeRpcError(error)}\n`);
    return 1;
  }
}
