import type { Queryable } from "../../pool.js";

export interface SignInAttemptRow {
  state: string;
  code_verifier: string;
  nonce: string;
  return_to: string;
  cli_poll_hash: Buffer | null;
  cli_token: string | null;
  cli_done: boolean;
}

export interface NewSignInAttempt {
  state: string;
  codeVerifier: string;
  nonce: string;
  returnTo: string;
  cliPollHash: Buffer | null;
  now: Date;
  expiresAt: Date;
}

export async function insertSignInAttempt(db: Queryable, attempt: NewSignInAttempt): Promise<void> {
  await db.query(
    `INSERT INTO sign_in_attempts (state, code_verifier, nonce, return_to, cli_poll_hash, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [attempt.state, attempt.codeVerifier, attempt.nonce, attempt.returnTo, attempt.cliPollHash, attempt.now, attempt.expiresAt],
  );
}

/**
 * A CLI attempt nobody has taken yet, for its confirmation page: the page
 * leads to the provider with the challenge of this attempt's verifier.
 */
export async function selectPendingCliSignIn(db: Queryable, state: string, now: Date): Promise<SignInAttemptRow | undefined> {
  const { rows } = await db.query<SignInAttemptRow>(
    `SELECT state, code_verifier, nonce, return_to, cli_poll_hash, cli_token, cli_done FROM sign_in_attempts
      WHERE state = $1 AND expires_at > $2 AND code_verifier <> '' AND cli_poll_hash IS NOT NULL AND NOT cli_done`,
    [state, now],
  );
  return rows[0];
}

/**
 * Takes the attempt of a callback's state: usable once. A browser attempt
 * is deleted; a CLI one stays (without its verifier) until the CLI collects
 * its token.
 */
export async function takeSignInAttempt(db: Queryable, state: string, now: Date): Promise<SignInAttemptRow | undefined> {
  const { rows } = await db.query<SignInAttemptRow>(
    `WITH taken AS (
       SELECT * FROM sign_in_attempts WHERE state = $1 AND expires_at > $2 AND code_verifier <> '' FOR UPDATE
     ), used AS (
       UPDATE sign_in_attempts a SET code_verifier = '' FROM taken WHERE a.state = taken.state AND taken.cli_poll_hash IS NOT NULL
     ), gone AS (
       DELETE FROM sign_in_attempts a USING taken WHERE a.state = taken.state AND taken.cli_poll_hash IS NULL
     )
     SELECT state, code_verifier, nonce, return_to, cli_poll_hash, cli_token, cli_done FROM taken`,
    [state, now],
  );
  return rows[0];
}

/** Leaves the CLI's token for it to collect. */
export async function completeCliSignIn(db: Queryable, state: string, token: string): Promise<void> {
  await db.query("UPDATE sign_in_attempts SET cli_token = $2, cli_done = true WHERE state = $1", [state, token]);
}

/** Ends a CLI sign-in as refused: the poll answers so at once instead of waiting out its expiry. */
export async function refuseCliSignIn(db: Queryable, state: string): Promise<void> {
  await db.query("UPDATE sign_in_attempts SET cli_done = true WHERE state = $1", [state]);
}

/**
 * The CLI's poll: its token once (the row is deleted as it is read), or
 * `pending`, or undefined for an unknown, expired or refused attempt.
 */
export async function collectCliSignIn(
  db: Queryable,
  state: string,
  pollHash: Buffer,
  now: Date,
): Promise<{ token: string } | "pending" | undefined> {
  const { rows } = await db.query<{ cli_token: string | null; cli_done: boolean }>(
    "SELECT cli_token, cli_done FROM sign_in_attempts WHERE state = $1 AND cli_poll_hash = $2 AND expires_at > $3",
    [state, pollHash, now],
  );
  const row = rows[0];
  if (!row) return undefined;
  if (!row.cli_done) return "pending";
  await db.query("DELETE FROM sign_in_attempts WHERE state = $1", [state]);
  return row.cli_token ? { token: row.cli_token } : undefined;
}

/** Sign-ins under way: a bound on what anonymous requests can leave in the table. */
export async function countPendingSignIns(db: Queryable, now: Date): Promise<number> {
  const { rows } = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM sign_in_attempts WHERE expires_at > $1", [now]);
  return rows[0]!.n;
}
