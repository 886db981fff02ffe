import { LakeFormat } from "../../../../gen/waypost/v1/destination_pb.js";
import { InvalidInputError } from "../../../errors.js";
import { parseLakeUrl } from "../../../lake/lake-url.js";
import type { LakeFormat as FileFormat } from "../../../lake/object-keys.js";
import type { AddressGuard } from "../../../outbound/address-guard.js";
import { maskedSecret, refuseLiteralHost } from "../broker-address.js";
import { keepStoredSecret } from "../nats/nats-settings.js";

/** A lake destination's settings as stored. The secret key is never shown. */
export interface LakeSettings {
  /** `s3://bucket/prefix` or `file:///directory`. */
  url: string;
  /** An S3-compatible endpoint ("" for AWS S3). */
  endpoint: string;
  region: string;
  /** "" with the secret "": the standard AWS credential chain. */
  accessKeyId: string;
  secretAccessKey: string;
  format: FileFormat;
  flushSeconds: number;
  maxFileMb: number;
  /** Every call as stored, before the destination's rules, into the `calls` table. */
  archive: boolean;
}

/** What a create or update sends (the proto message's fields); zero values take the defaults. */
export interface LakeSettingsInput {
  url: string;
  endpoint?: string | undefined;
  region?: string | undefined;
  accessKeyId?: string | undefined;
  secretAccessKey?: string | undefined;
  format?: LakeFormat | undefined;
  flushSeconds?: number | undefined;
  maxFileMb?: number | undefined;
  archive?: boolean | undefined;
}

export const lakeDefaults = { region: "us-east-1", format: "parquet", flushSeconds: 60, maxFileMb: 128 } as const;

export const lakeLimits = {
  maxUrlLength: 1024,
  maxKeyLength: 256,
  flushSeconds: { min: 1, max: 3_600 },
  maxFileMb: { min: 1, max: 1_024 },
} as const;

/**
 * Reads and checks a lake destination's settings (`field`: their path,
 * `destination.lake`). On an update, a secret sent back as `***` keeps
 * the stored one. An endpoint's literal host is held to the address guard
 * here; a name is judged on what it resolves to when files are written.
 */
export function validateLakeSettings(field: string, input: LakeSettingsInput, guard: AddressGuard, stored?: LakeSettings): LakeSettings {
  const url = lakeUrl(`${field}.url`, input.url);
  const s3 = url.startsWith("s3:");
  const endpoint = lakeEndpoint(`${field}.endpoint`, input.endpoint ?? "", guard);
  if (!s3 && endpoint !== "") throw new InvalidInputError(`${field}.endpoint`, "is for s3:// URLs only");
  const region = text(`${field}.region`, input.region ?? "", 64) || lakeDefaults.region;
  if (!/^[a-z0-9-]+$/.test(region)) throw new InvalidInputError(`${field}.region`, `${JSON.stringify(region)} is not a region name`);
  const accessKeyId = text(`${field}.accessKeyId`, input.accessKeyId ?? "", lakeLimits.maxKeyLength);
  const secretAccessKey = keepStoredSecret(`${field}.secretAccessKey`, input.secretAccessKey ?? "", stored?.secretAccessKey);
  if ((accessKeyId === "") !== (secretAccessKey === "")) {
    throw new InvalidInputError(
      `${field}.${accessKeyId === "" ? "accessKeyId" : "secretAccessKey"}`,
      "is required with the other key (or leave both empty for the AWS credential chain)",
    );
  }
  if (!s3 && accessKeyId !== "") throw new InvalidInputError(`${field}.accessKeyId`, "is for s3:// URLs only");
  return {
    url,
    endpoint,
    region,
    accessKeyId,
    secretAccessKey,
    format: fileFormat(`${field}.format`, input.format ?? LakeFormat.UNSPECIFIED),
    flushSeconds: bounded(`${field}.flushSeconds`, input.flushSeconds || lakeDefaults.flushSeconds, lakeLimits.flushSeconds),
    maxFileMb: bounded(`${field}.maxFileMb`, input.maxFileMb || lakeDefaults.maxFileMb, lakeLimits.maxFileMb),
    archive: input.archive ?? false,
  };
}

/** The settings for a response: the secret key masked. */
export function lakeSettingsView(settings: LakeSettings) {
  return {
    url: settings.url,
    endpoint: settings.endpoint,
    region: settings.region,
    accessKeyId: settings.accessKeyId,
    secretAccessKey: settings.secretAccessKey === "" ? "" : maskedSecret,
    hasSecretAccessKey: settings.secretAccessKey !== "",
    format: settings.format === "ndjson_gz" ? LakeFormat.NDJSON_GZ : LakeFormat.PARQUET,
    flushSeconds: settings.flushSeconds,
    maxFileMb: settings.maxFileMb,
    archive: settings.archive,
  };
}

/** Where a lake's attempts say they went: its URL, and the endpoint when there is one. */
export function lakeLabel(settings: LakeSettings): string {
  return settings.endpoint === "" ? settings.url : `${settings.url} at ${settings.endpoint}`;
}

function lakeUrl(field: string, raw: string): string {
  if (raw === "") throw new InvalidInputError(field, "is required (s3://bucket/prefix or file:///directory)");
  if (raw.length > lakeLimits.maxUrlLength) throw new InvalidInputError(field, `is longer than ${lakeLimits.maxUrlLength} characters`);
  if (/[\p{Cc}]/u.test(raw)) throw new InvalidInputError(field, "must not contain control characters");
  try {
    parseLakeUrl(raw);
  } catch (error) {
    throw new InvalidInputError(field, (error as Error).message);
  }
  return raw;
}

function lakeEndpoint(field: string, raw: string, guard: AddressGuard): string {
  if (raw === "") return "";
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new InvalidInputError(field, `${JSON.stringify(raw.slice(0, 100))} is not a URL (https://host:port)`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") throw new InvalidInputError(field, "must be an http:// or https:// URL");
  if (url.username !== "" || url.password !== "") {
    throw new InvalidInputError(field, "must not contain a user name or password: use accessKeyId and secretAccessKey");
  }
  if ((url.pathname !== "" && url.pathname !== "/") || url.search !== "" || url.hash !== "") {
    throw new InvalidInputError(field, "must be just scheme, host and port (the bucket is in the URL)");
  }
  const refused = refuseLiteralHost(url.hostname, guard);
  if (refused) throw new InvalidInputError(field, refused);
  return `${url.protocol}//${url.host}`;
}

function fileFormat(field: string, value: LakeFormat): FileFormat {
  if (value === LakeFormat.UNSPECIFIED || value === LakeFormat.PARQUET) return "parquet";
  if (value === LakeFormat.NDJSON_GZ) return "ndjson_gz";
  throw new InvalidInputError(field, `unknown format ${value}; use LAKE_FORMAT_PARQUET or LAKE_FORMAT_NDJSON_GZ`);
}

function bounded(field: string, value: number, range: { min: number; max: number }): number {
  if (!Number.isInteger(value) || value < range.min || value > range.max) {
    throw new InvalidInputError(field, `must be from ${range.min} to ${range.max}, got ${value}`);
  }
  return value;
}

function text(field: string, value: string, max: number): string {
  if (value.length > max) throw new InvalidInputError(field, `is longer than ${max} characters`);
  if (/[\p{Cc}\s]/u.test(value)) throw new InvalidInputError(field, "must not contain spaces or control characters");
  return value;
}
