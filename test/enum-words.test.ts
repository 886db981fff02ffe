import { expect, test } from "vitest";
import { Fate } from "../gen/waypost/v1/delivery_pb.js";
import { TestOutcome } from "../gen/waypost/v1/destination_pb.js";
import { enumWords } from "../src/enum-words.js";

test("every value of a generated enum in words, from its name", () => {
  const words = enumWords(Fate);
  expect(words[Fate.DELIVERED]).toBe("delivered");
  expect(words[Fate.NOT_CONNECTED]).toBe("not connected");
  expect(words[Fate.INTEGRATIONS_OFF]).toBe("integrations off");
  // Every value has its words: one added to the enum needs no new entry.
  const values = Object.values(Fate).filter((value): value is Fate => typeof value === "number");
  expect(values.filter((value) => !words[value])).toEqual([]);
});

test("special words replace a name's, and capitalized words start with a capital", () => {
  const words = enumWords(TestOutcome, { [TestOutcome.UNSPECIFIED]: "–", [TestOutcome.NOT_SUBSCRIBED]: "No subscription matched" }, true);
  expect(words[TestOutcome.UNSPECIFIED]).toBe("–");
  expect(words[TestOutcome.NOT_SUBSCRIBED]).toBe("No subscription matched");
  expect(words[TestOutcome.DROPPED_BY_TRANSFORM]).toBe("Dropped by transform");
});
