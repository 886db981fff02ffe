import type { Command } from "commander";
import type { CliIo, Wire } from "./context.js";

/** Adds one module's top-level commands to the program. */
export type RegisterCommands = (program: Command, wire: Wire, io: CliIo) => void;

/** A file of commands, loaded only when its commands may run. */
export interface CommandModule {
  /** The top-level command names it registers (a test holds this to what it does). */
  readonly names: readonly string[];
  load(): Promise<RegisterCommands>;
}

/**
 * Every command file, in the order `waypost --help` lists them. Loading a
 * file loads the generated descriptors and clients it needs, which cost
 * most of a start: a run loads the one file of the command it names, and
 * every file only for the program's own help or a name none has.
 */
export const commandModules: readonly CommandModule[] = [
  { names: ["serve"], load: async () => (await import("./commands/serve.js")).registerServe },
  { names: ["sources"], load: async () => (await import("./commands/sources.js")).registerSources },
  { names: ["hooks"], load: async () => (await import("./commands/hooks.js")).registerHooks },
  { names: ["destinations"], load: async () => (await import("./commands/destinations.js")).registerDestinations },
  { names: ["integrations"], load: async () => (await import("./commands/integrations.js")).registerIntegrations },
  { names: ["deliveries"], load: async () => (await import("./commands/deliveries.js")).registerDeliveries },
  { names: ["backfills"], load: async () => (await import("./commands/backfills.js")).registerBackfills },
  { names: ["messages"], load: async () => (await import("./commands/routing.js")).registerMessages },
  { names: ["stats"], load: async () => (await import("./commands/stats.js")).registerStats },
  { names: ["audiences"], load: async () => (await import("./commands/audiences.js")).registerAudiences },
  { names: ["profiles"], load: async () => (await import("./commands/profiles.js")).registerProfiles },
  { names: ["deletions"], load: async () => (await import("./commands/deletions.js")).registerDeletions },
  { names: ["plan"], load: async () => (await import("./commands/plans.js")).registerPlans },
  { names: ["send"], load: async () => (await import("./commands/send.js")).registerSend },
  { names: ["login", "logout"], load: async () => (await import("./commands/login.js")).registerLogin },
  { names: ["tokens"], load: async () => (await import("./commands/tokens.js")).registerTokens },
  { names: ["users"], load: async () => (await import("./commands/users.js")).registerUsers },
  { names: ["audit"], load: async () => (await import("./commands/audit.js")).registerAudit },
  { names: ["whoami"], load: async () => (await import("./commands/whoami.js")).registerWhoami },
  {
    names: ["backup", "restore"],
    load: async () => {
      const { registerBackup } = await import("./commands/backup.js");
      return (program, _wire, io) => registerBackup(program, io);
    },
  },
];

/** The program's options that take a value, which may stand before the command's name. */
const valuedOptions = new Set(["--url", "--token"]);

/** The command a line names: its first word that is not an option or an option's value. */
export function commandNameOf(argv: readonly string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i]!;
    if (word === "--") return argv[i + 1];
    if (!word.startsWith("-")) return word;
    if (valuedOptions.has(word)) i++;
  }
  return undefined;
}

/** The files a line needs: the one whose command it names, or all of them (help, a typo, no command). */
export function modulesFor(argv: readonly string[]): readonly CommandModule[] {
  const name = commandNameOf(argv);
  const named = commandModules.find((module) => name !== undefined && module.names.includes(name));
  return named ? [named] : commandModules;
}
