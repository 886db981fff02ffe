import { expect } from "vitest";
import { arrayLiteral } from "../../src/warehouse/array-literal.js";
import { testWith } from "../helpers/fixtures.js";

const test = testWith({ database: { migrated: false } });

const awkward = [
  "plain",
  "",
  "NULL",
  "null",
  'a "quoted" word',
  "back\\slash",
  '\\"',
  "a,b",
  "{braces}",
  " spaced ",
  "ünï😀",
  "line\nbreak",
  "tab\tx",
];

test("Postgres reads back every text value as written, NULL as null, in order", async ({ pool }) => {
  const values = [...awkward, null, "last"];
  const { rows } = await pool.query<{ v: Array<string | null> }>("SELECT $1::text[] AS v", [arrayLiteral(values)]);
  expect(rows[0]!.v).toEqual(values);
});

test("typed columns cast from the literal: numbers, booleans, timestamps, jsonb; an empty array is empty", async ({ pool }) => {
  const { rows } = await pool.query(
    "SELECT $1::bigint[] AS b, $2::double precision[] AS d, $3::boolean[] AS t, $4::timestamptz[] AS ts, $5::jsonb[] AS j, $6::text[] AS e",
    [
      arrayLiteral(["42", null, "-7"]),
      arrayLiteral(["4.5", "1e-7"]),
      arrayLiteral(["true", "false"]),
      arrayLiteral(["2026-11-22T10:04:05.123Z"]),
      arrayLiteral([JSON.stringify({ a: 'x"y', b: ["\\"] })]),
      arrayLiteral([]),
    ],
  );
  expect(rows[0]).toEqual({
    b: ["42", null, "-7"],
    d: [4.5, 1e-7],
    t: [true, false],
    ts: [new Date("2026-11-22T10:04:05.123Z")],
    j: [{ a: 'x"y', b: ["\\"] }],
    e: [],
  });
});
