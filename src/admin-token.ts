import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";

/** Where the server keeps the admin token it created (the CLI reads it there too). */
export function adminTokenFile(dataDir: string): string {
  return path.resolve(dataDir, "admin-token");
}

/**
 * The admin token from the environment, or the one kept in the data
 * directory (created on first start, readable by the owner only).
 */
export async function resolveAdminToken(
  configured: string | undefined,
  dataDir: string,
): Promise<{ token: string; file?: string; created: boolean }> {
  if (configured) return { token: configured, created: false };
  const file = adminTokenFile(dataDir);
  if (existsSync(file)) return { token: (await readFile(file, "utf8")).trim(), file, created: false };
  await mkdir(path.dirname(file), { recursive: true });
  const token = `wpa_${randomBytes(32).toString("base64url")}`;
  await writeFile(file, `${token}\n`, { mode: 0o600, flag: "wx" }).catch(async (error: NodeJS.ErrnoException) => {
    // Another process created it first: use theirs.
    if (error.code !== "EEXIST") throw error;
  });
  return { token: (await readFile(file, "utf8")).trim(), file, created: true };
}
