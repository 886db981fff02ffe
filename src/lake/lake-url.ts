import path from "node:path";
import { fileURLToPath } from "node:url";

/** Where a lake writes: a bucket in S3-compatible storage, or a local directory. */
export type LakeLocation = { kind: "s3"; bucket: string; prefix: string } | { kind: "file"; directory: string; prefix: string };

/**
 * Parses a lake URL: `s3://bucket/some/prefix` or `file:///absolute/dir`.
 * The prefix has no leading or trailing `/` (it may be empty), so keys join
 * as `${prefix}/${table}/…` without doubled slashes. Throws with the reason
 * when the URL is not one of the two.
 */
export function parseLakeUrl(url: string): LakeLocation {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`lake URL ${JSON.stringify(url)} is not a URL (s3://bucket/prefix or file:///directory)`);
  }
  if (parsed.protocol === "s3:") {
    const bucket = parsed.hostname;
    if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) {
      throw new Error(`lake URL: ${JSON.stringify(bucket)} is not a valid bucket name`);
    }
    if (parsed.username || parsed.password) throw new Error("lake URL: put keys in accessKeyId/secretAccessKey, not in the URL");
    return { kind: "s3", bucket, prefix: trimSlashes(decodeURIComponent(parsed.pathname)) };
  }
  if (parsed.protocol === "file:") {
    if (parsed.hostname !== "" && parsed.hostname !== "localhost") throw new Error("lake URL: file:// takes a local path (file:///dir)");
    const directory = path.resolve(fileURLToPath(parsed));
    return { kind: "file", directory, prefix: "" };
  }
  throw new Error(`lake URL scheme ${JSON.stringify(parsed.protocol)} is not supported (s3:// or file://)`);
}

/** The text without leading and trailing `/` (a loop: a regex for it backtracks on long runs of `/`). */
export function trimSlashes(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && text.charCodeAt(start) === 47) start++;
  while (end > start && text.charCodeAt(end - 1) === 47) end--;
  return text.slice(start, end);
}
