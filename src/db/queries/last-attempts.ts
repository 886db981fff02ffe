import { attemptsReader } from "./attempts-of.js";

export interface LastAttemptRow {
  delivery_id: string;
  outcome: "success" | "retryable" | "permanent" | "abandoned";
  status_code: number | null;
  error: string | null;
}

/**
 * Each delivery's last attempt (with several webhooks, its first failed
 * request if any), its own or a batch's, through the attempts' primary keys: a page of the basic
 * view shows what went wrong without reading every attempt. A batch POST
 * refused as too large and sent again split is not the last of its URL.
 */
export const selectLastAttempts = attemptsReader<LastAttemptRow>(
  (attempts) => `SELECT DISTINCT ON (delivery_id) delivery_id, outcome, status_code, error
     FROM (SELECT *, position = max(position) OVER (PARTITION BY delivery_id, attempt, url_index) AS latest
             FROM ${attempts} a) a
    WHERE latest
    ORDER BY delivery_id, attempt DESC, outcome = 'success', url_index`,
);
