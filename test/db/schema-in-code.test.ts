import { describe } from "vitest";
import { openTestDatabase } from "../helpers/database.js";
import { schemaInCodeCases } from "./schema-in-code-cases.js";

describe("the dropped triggers' work, on one Postgres", () => {
  schemaInCodeCases("postgres", () => openTestDatabase({ max: 4 }));
});
