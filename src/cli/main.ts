#!/usr/bin/env node
import { runCli } from "./program.js";

// The `waypost` command. SIGINT ends a running command (deliveries tail)
// cleanly; the exit code is the command's.
const stop = new AbortController();
const onSigint = () => stop.abort();
process.once("SIGINT", onSigint);
runCli(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: process.env }, stop.signal).then(
  (code) => {
    process.exitCode = code;
    process.removeListener("SIGINT", onSigint);
  },
  (error: unknown) => {
    process.stderr.write(`waypost: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  },
);
