import net from "node:net";
import { StartupError } from "../startup-error.js";

/**
 * Binds the listen address and lets it go again, before anything slow
 * (the embedded Postgres, migrations) runs: a port in use is then reported
 * at once, not after the database set-up. The real listener binds later,
 * when the service can answer; if the port is taken in between, listen()
 * fails the same way and explainListenFailure says so. Port 0 (any free
 * port) cannot be in use and is not probed.
 */
export async function checkListenAddress(port: number, host: string): Promise<void> {
  if (port === 0) return;
  const probe = net.createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once("error", reject);
    probe.listen(port, host, () => resolve());
  }).catch((error: unknown) => {
    throw explainListenFailure(error, port, host);
  });
  await new Promise<void>((resolve) => probe.close(() => resolve()));
}

/** A listen error as the operator needs it: which setting to change. */
export function explainListenFailure(error: unknown, port: number, host: string): unknown {
  const code = (error as { code?: string } | null)?.code;
  if (code === "EADDRINUSE") {
    return new StartupError(`port ${port} on ${host} is in use (EADDRINUSE; another Waypost?): stop that process or set PORT`, {
      cause: error,
    });
  }
  if (code === "EACCES") {
    return new StartupError(`port ${port} needs privileges this process lacks (EACCES): set PORT to 1024 or above`, { cause: error });
  }
  if (code === "EADDRNOTAVAIL" || code === "ENOTFOUND") {
    return new StartupError(
      `HOST ${host} is not an address of this machine (${code}): set HOST (127.0.0.1, or 0.0.0.0 for every interface)`,
      {
        cause: error,
      },
    );
  }
  return error;
}
