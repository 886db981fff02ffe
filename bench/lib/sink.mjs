// @ts-check
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";

/** @typedef {Awaited<ReturnType<typeof startSink>>} Sink */

/** Starts the sink process; its API is request/response over IPC. */
export async function startSink() {
  const child = fork(fileURLToPath(new URL("../sink-process.mjs", import.meta.url)), [], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  /** @type {number} */
  const port = await new Promise((resolve) => child.once("message", (m) => resolve(/** @type {{ port: number }} */ (m).port)));
  let next = 0;
  /**
   * @param {{ type: string, track?: boolean }} message
   * @returns {Promise<any>}
   */
  const ask = (message) =>
    new Promise((resolve) => {
      const id = ++next;
      const onMessage = (/** @type {any} */ reply) => {
        if (reply.id !== id) return;
        child.off("message", onMessage);
        resolve(reply);
      };
      child.on("message", onMessage);
      child.send({ ...message, id });
    });
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid,
    count: async () => (await ask({ type: "count" })).count,
    /** Calls received: requests, except that a POST to /batch counts the calls in its body. */
    calls: async () => (await ask({ type: "calls" })).count,
    /** OTLP exports received on /v1/traces since the last reset: requests and bytes. */
    otlp: async () => {
      const { requests, bytes } = await ask({ type: "otlp" });
      return { requests: /** @type {number} */ (requests), bytes: /** @type {number} */ (bytes) };
    },
    /** TCP connections the sink accepted since the last reset. */
    connections: async () => (await ask({ type: "connections" })).count,
    reset: (track = false) => ask({ type: "reset", track }),
    arrivals: async () => (await ask({ type: "arrivals" })).arrivals,
    /**
     * Resolves when the sink has counted `target` requests (`type` "calls": calls); polls every 20 ms.
     * @param {number} target
     * @returns {Promise<number>} when (performance.now()) it had
     */
    async waitForCount(target, timeoutMs = 600_000, type = "count") {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const n = (await ask({ type })).count;
        if (n >= target) return performance.now();
        if (Date.now() > deadline) throw new Error(`sink saw ${n} of ${target} ${type === "calls" ? "calls" : "requests"} in time`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    close: () =>
      new Promise((resolve) => {
        child.once("exit", resolve);
        child.send({ type: "close" });
      }),
  };
}
