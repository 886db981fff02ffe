import { describe } from "vitest";
import { citusSkipReason, citusUrl, openCitusTestDatabase } from "../../helpers/citus.js";
import { schemaInCodeCases } from "../schema-in-code-cases.js";

describe.skipIf(!citusUrl)(`the dropped triggers' work, on the Citus cluster${citusSkipReason}`, () => {
  schemaInCodeCases("citus", () => openCitusTestDatabase({ max: 4 }));
});
