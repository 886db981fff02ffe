import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { availableParallelism } from "node:os";

/** Processes spinning on every core, as on a machine at a load of several times its cores. */
export interface BusyMachine {
  /** How many spin. */
  readonly spinners: number;
  stop(): Promise<void>;
}

/**
 * Starts `perCore` busy loops per core in child processes and resolves once
 * each of them runs: a thread of the test process then gets a fraction of
 * a core, whatever else the machine is doing.
 */
export async function loadTheMachine(perCore = 4): Promise<BusyMachine> {
  const count = perCore * availableParallelism();
  const children: ChildProcess[] = [];
  const stop = async () => {
    await Promise.all(
      children.map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = once(child, "exit");
        child.kill("SIGKILL");
        await exited;
      }),
    );
  };
  try {
    for (let i = 0; i < count; i++) {
      const child = spawn(process.execPath, ["-e", "process.stdout.write('spinning\\n'); for (;;) {}"], {
        stdio: ["ignore", "pipe", "inherit"],
      });
      children.push(child);
    }
    await Promise.all(children.map((child) => once(child.stdout!, "data")));
  } catch (error) {
    await stop();
    throw error;
  }
  return { spinners: count, stop };
}
