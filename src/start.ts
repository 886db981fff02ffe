import { semiSpaceArgs } from "./heap-settings.js";

// The process's first module (`node dist/server.js`). V8 takes the young
// generation's cap only on its command line (heap-settings.ts): when it is
// missing, the process replaces itself (execve: the same pid, environment
// and signals) with one that has it, before anything else is loaded. A Node
// without process.execve (before 22.15) runs with its own sizes.
const args = semiSpaceArgs(process.env, process.execArgv);
if (args && typeof process.execve === "function") {
  process.execve(process.execPath, [process.execPath, ...args, ...process.execArgv, ...process.argv.slice(1)], process.env);
}
await import("./main.js");
