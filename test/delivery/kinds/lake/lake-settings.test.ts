import { expect, test } from "vitest";
import { LakeFormat } from "../../../../gen/waypost/v1/destination_pb.js";
import { lakeSettingsView, validateLakeSettings } from "../../../../src/delivery/kinds/lake/lake-settings.js";
import { createAddressGuard } from "../../../../src/outbound/address-guard.js";

const strict = createAddressGuard({ allowPrivate: false, allowedCidrs: [] });
const open = createAddressGuard({ allowPrivate: true, allowedCidrs: [] });
const field = "destination.lake";

test("defaults fill what a create leaves out", () => {
  expect(validateLakeSettings(field, { url: "s3://analytics/waypost" }, strict)).toEqual({
    url: "s3://analytics/waypost",
    endpoint: "",
    region: "us-east-1",
    accessKeyId: "",
    secretAccessKey: "",
    format: "parquet",
    flushSeconds: 60,
    maxFileMb: 128,
    archive: false,
  });
  const ndjson = validateLakeSettings(field, { url: "file:///var/lake", format: LakeFormat.NDJSON_GZ, flushSeconds: 5 }, strict);
  expect(ndjson).toMatchObject({ format: "ndjson_gz", flushSeconds: 5 });
});

test("an endpoint's literal private or loopback host is refused unless private destinations are allowed", () => {
  for (const endpoint of [
    "http://127.0.0.1:9000",
    "http://169.254.169.254",
    "http://[::1]:9000",
    "https://localhost:9000",
    "http://10.1.2.3",
  ]) {
    expect(() => validateLakeSettings(field, { url: "s3://lake", endpoint }, strict), endpoint).toThrow(/destination\.lake\.endpoint/);
  }
  expect(validateLakeSettings(field, { url: "s3://lake", endpoint: "http://127.0.0.1:9000/" }, open).endpoint).toBe(
    "http://127.0.0.1:9000",
  );
  // A public name is judged on what it resolves to, when files are written.
  expect(validateLakeSettings(field, { url: "s3://lake", endpoint: "https://minio.example.com:9000" }, strict).endpoint).toBe(
    "https://minio.example.com:9000",
  );
});

test("bad settings are refused naming the field", () => {
  const refused: Array<[Parameters<typeof validateLakeSettings>[1], RegExp]> = [
    [{ url: "" }, /destination\.lake\.url: is required/],
    [{ url: "https://bucket.example.com" }, /destination\.lake\.url: .*not supported/],
    [{ url: "s3://UPPER" }, /destination\.lake\.url: .*not a valid bucket name/],
    [{ url: "s3://lake", endpoint: "ftp://store" }, /destination\.lake\.endpoint: must be an http/],
    [{ url: "s3://lake", endpoint: "https://user:pw@store" }, /destination\.lake\.endpoint: must not contain a user name/],
    [{ url: "s3://lake", endpoint: "https://store/bucket" }, /destination\.lake\.endpoint: must be just scheme/],
    [{ url: "file:///tmp/x", endpoint: "https://store" }, /destination\.lake\.endpoint: is for s3:\/\/ URLs only/],
    [{ url: "s3://lake", accessKeyId: "AKID" }, /destination\.lake\.secretAccessKey: is required with the other key/],
    [{ url: "s3://lake", secretAccessKey: "s" }, /destination\.lake\.accessKeyId: is required with the other key/],
    [{ url: "s3://lake", secretAccessKey: "***", accessKeyId: "AKID" }, /no stored value to keep/],
    [{ url: "s3://lake", flushSeconds: 4_000 }, /destination\.lake\.flushSeconds: must be from 1 to 3600/],
    [{ url: "s3://lake", maxFileMb: 2_000 }, /destination\.lake\.maxFileMb: must be from 1 to 1024/],
    [{ url: "s3://lake", region: "eu west" }, /destination\.lake\.region/],
    [{ url: "s3://lake", format: 9 as LakeFormat }, /destination\.lake\.format: unknown format 9/],
  ];
  for (const [input, message] of refused) expect(() => validateLakeSettings(field, input, open), JSON.stringify(input)).toThrow(message);
});

test("the secret is write-only: masked when shown, kept when sent back masked", () => {
  const stored = validateLakeSettings(field, { url: "s3://lake", accessKeyId: "AKID", secretAccessKey: "lake-secret-1" }, strict);
  const view = lakeSettingsView(stored);
  expect(view).toMatchObject({ accessKeyId: "AKID", secretAccessKey: "***", hasSecretAccessKey: true });
  expect(JSON.stringify(view)).not.toContain("lake-secret-1");
  const again = validateLakeSettings(field, { ...view, url: "s3://lake/other" }, strict, stored);
  expect(again.secretAccessKey).toBe("lake-secret-1");
  expect(again.url).toBe("s3://lake/other");
});
