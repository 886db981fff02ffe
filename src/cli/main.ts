#!/usr/bin/env node
import { runCli } from "./program.js";

// The `waypost` command. SIGINT ends a running command (deliveries tail)
// cleanly; the exit code is the command's.
const stop = new AbortController();
const onSigint = () => stop.abort();
process.once("SIGINT", onSigint);
runCli(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: process.env }, stop.signal).then(
  (code) => {
    // Exit now rather than when idle keep-alive connections close, once
    // what was written has been flushed.
    process.stdout.write("", () => process.stderr.write("", () => process.exit(code)));
  },
  (error: unknown) => {
    process.stderr.write(`waypost: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
