import { TestOutcome, type TestedCall, type VendorRequest } from "../../../gen/waypost/v1/destination_pb.js";
import { table } from "../format.js";
import { enumWords } from "../../enum-words.js";

const outcomeNames = enumWords(TestOutcome, { [TestOutcome.UNSPECIFIED]: "-", [TestOutcome.NOT_SUBSCRIBED]: "no subscription matched" });

/**
 * `destinations test` as text: a row per call; an integration's call (it
 * sends requests its actions build, not the call) names its requests in the
 * row and lists each under the table with its headers and body, secrets
 * masked, as `--json` has them.
 */
export function testedCallsText(calls: readonly TestedCall[]): string {
  const rows = calls.map((c) => [
    c.messageId,
    c.type,
    c.event || "-",
    outcomeNames[c.outcome],
    c.error || c.body || requestsSummary(c.requests),
  ]);
  const text = table(["MESSAGE ID", "TYPE", "EVENT", "OUTCOME", "BODY OR ERROR"], rows);
  const detailed = calls.filter((c) => c.requests.length > 0);
  if (detailed.length === 0) return text;
  const sections = detailed.map((c) => `requests for ${c.messageId} (secrets masked):\n${c.requests.map(requestText).join("\n")}`);
  return `${text}\n\n${sections.join("\n\n")}`;
}

function requestsSummary(requests: readonly VendorRequest[]): string {
  if (requests.length === 0) return "";
  const [first] = requests;
  const more = requests.length > 1 ? ` and ${requests.length - 1} more` : "";
  return `${first!.method} ${first!.url}${more} (below)`;
}

function requestText(r: VendorRequest, i: number): string {
  const lines = [`  ${i + 1}. ${r.subscription}: ${r.method} ${r.url}`];
  for (const [k, v] of Object.entries(r.headers)) lines.push(`     ${k}: ${v}`);
  if (r.body !== "") lines.push(`     body: ${r.body}`);
  return lines.join("\n");
}
