// @ts-check
// GetProfile probes in a process of their own (bench/lib/identity-load.mjs
// forks it): the parent sends {type: "start", baseUrl, shape, perSecond},
// later {type: "stop"}, and gets back every answered probe's latency (ms)
// and the errors. Each probe is sent on schedule whether or not the last was
// answered (a slow answer does not thin the probes): half by a known userId,
// a quarter by a known user's anonymousId, a quarter by an anonymous-only
// visitor's (merged or not).
import { rpc } from "./lib/admin.mjs";
import { anonymousOnlyId, knownUserAnonymousId, knownUserId } from "./lib/identity-graph.mjs";

/** @type {number[]} */
const latencies = [];
/** @type {string[]} */
const errors = [];
/** @type {Set<Promise<void>>} */
const inFlight = new Set();
/** @type {NodeJS.Timeout | undefined} */
let timer;

/**
 * @param {string} baseUrl
 * @param {import("./lib/identity-graph.mjs").GraphShape} shape
 * @param {number} perSecond
 */
function start(baseUrl, shape, perSecond) {
  const pick = () => {
    const r = Math.random();
    if (r < 0.5) return { type: "user_id", value: knownUserId(1 + Math.floor(Math.random() * shape.users)) };
    if (r < 0.75) return { type: "anonymous_id", value: knownUserAnonymousId(1 + Math.floor(Math.random() * shape.users)) };
    return { type: "anonymous_id", value: anonymousOnlyId(1 + Math.floor(Math.random() * shape.anonymousOnly)) };
  };
  timer = setInterval(() => {
    const t = performance.now();
    const probe = rpc(baseUrl, "ProfileService/GetProfile", { identifier: pick() })
      .then((answer) => {
        if (!answer.profile?.id) throw new Error(`no profile in ${JSON.stringify(answer).slice(0, 200)}`);
        latencies.push(performance.now() - t);
      })
      .catch((/** @type {Error} */ error) => void errors.push(error.message.slice(0, 200)))
      .finally(() => inFlight.delete(probe));
    inFlight.add(probe);
  }, 1000 / perSecond);
}

process.on("message", async (/** @type {{ type: "start" | "stop", baseUrl: string, shape: any, perSecond: number }} */ message) => {
  if (!process.send) throw new Error("the probe runs as a child process (bench/lib/identity-load.mjs forks it)");
  if (message.type === "start") return start(message.baseUrl, message.shape, message.perSecond);
  clearInterval(timer);
  await Promise.all(inFlight);
  process.send({ latencies, errors }, () => process.exit(0));
});
