import { createHash, randomInt } from "node:crypto";
import { crc32 } from "node:zlib";

// An API token is `wpt_` + 30 random base62 characters + 6 characters of
// their CRC32, as GitHub's tokens are: secret scanners recognise the prefix,
// and the checksum tells a real token from a typo or a random string
// without a database lookup. The server keeps only the sha256.

export const tokenPrefix = "wpt_";
const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const randomLength = 30;
const checksumLength = 6;

function base62(value: number, width: number): string {
  let text = "";
  let rest = value;
  while (rest > 0) {
    text = alphabet[rest % 62] + text;
    rest = Math.floor(rest / 62);
  }
  return text.padStart(width, "0");
}

function checksumOf(random: string): string {
  return base62(crc32(random), checksumLength);
}

export function newTokenSecret(): string {
  let random = "";
  for (let i = 0; i < randomLength; i++) random += alphabet[randomInt(62)];
  return `${tokenPrefix}${random}${checksumOf(random)}`;
}

/** Whether `text` has a token's shape and a correct checksum. */
export function looksLikeTokenSecret(text: string): boolean {
  if (!text.startsWith(tokenPrefix) || text.length !== tokenPrefix.length + randomLength + checksumLength) return false;
  const random = text.slice(tokenPrefix.length, tokenPrefix.length + randomLength);
  if (![...random].every((char) => alphabet.includes(char))) return false;
  return checksumOf(random) === text.slice(tokenPrefix.length + randomLength);
}

export function hashTokenSecret(secret: string): Buffer {
  return createHash("sha256").update(secret, "utf8").digest();
}

/** What is shown of a token after it was created: enough to recognise it, not to use it. */
export function tokenDisplayPrefix(secret: string): string {
  return secret.slice(0, tokenPrefix.length + 6);
}
