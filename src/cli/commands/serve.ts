import type { Command } from "commander";

export function registerServe(program: Command): void {
  program
    .command("serve")
    .description("run Waypost (the same as `node dist/server.js`; configured by the environment: PORT, DATABASE_URL, ...)")
    .action(async () => {
      // The server's entry point runs on import and exits on SIGTERM/SIGINT.
      await import("../../main.js");
      await new Promise<never>(() => {});
    });
}
