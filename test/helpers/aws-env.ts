import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

const variables = [
  "AWS_EC2_METADATA_DISABLED",
  "AWS_CONFIG_FILE",
  "AWS_SHARED_CREDENTIALS_FILE",
  "AWS_ACCESS_KEY_ID",
  "AWS_SECRET_ACCESS_KEY",
  "AWS_SESSION_TOKEN",
  "AWS_PROFILE",
  "AWS_REGION",
  "AWS_DEFAULT_REGION",
  "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
  "AWS_CONTAINER_CREDENTIALS_FULL_URI",
  "AWS_WEB_IDENTITY_TOKEN_FILE",
] as const;

/**
 * Keeps the AWS SDK's default credential chain off the network and off the
 * machine's own settings: the instance metadata service is disabled and the
 * config and credentials files are empty ones of the test's. Call in
 * beforeAll; the returned function puts process.env back (test files share
 * a worker, so what one sets must not leak into the next).
 */
export function isolateAwsEnvironment(): () => void {
  const saved = new Map(variables.map((name) => [name, process.env[name]]));
  const directory = mkdtempSync(path.join(tmpdir(), "waypost-aws-"));
  const empty = path.join(directory, "empty");
  writeFileSync(empty, "");
  for (const name of variables) delete process.env[name];
  process.env.AWS_EC2_METADATA_DISABLED = "true";
  process.env.AWS_CONFIG_FILE = empty;
  process.env.AWS_SHARED_CREDENTIALS_FILE = empty;
  return () => {
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    rmSync(directory, { recursive: true, force: true });
  };
}
