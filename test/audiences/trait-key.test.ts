import { expect, test } from "vitest";
import { traitKey } from "../../src/audiences/trait-key.js";

test.each([
  // The two examples of docs/api.md#audiences-and-computed-traits.
  ["High Value Users", "high_value_users"],
  ["VIP-Customers 2024", "vip_customers_2024"],
  // Diacritics stripped.
  ["Café Lovers", "cafe_lovers"],
  ["Crème Brûlée Fans", "creme_brulee_fans"],
  ["ÉCOLE Élite", "ecole_elite"],
  // Digits kept, attached to their word.
  ["Top10 Users", "top10_users"],
  ["2024", "2024"],
  ["Cohort 7", "cohort_7"],
  // Repeated separators collapse.
  ["a  --  b", "a_b"],
  ["Churn___Risk", "churn_risk"],
  ["one / two & three", "one_two_three"],
  // Leading and trailing punctuation vanish.
  ["  --Hello World!!  ", "hello_world"],
  ["(Trial) Users.", "trial_users"],
  ["🚀 Power Users 🚀", "power_users"],
  // Case changes split words, as snake_case libraries do.
  ["HighValueUsers", "high_value_users"],
  ["VIPCustomers", "vip_customers"],
  // Compatibility forms fold; other scripts are kept.
  ["ﬁnance ＡＢＣ", "finance_abc"],
  ["日本 Fans", "日本_fans"],
])("%j → %j", (name, key) => {
  expect(traitKey(name)).toBe(key);
});

test.each(["!!!", "   ", "—", "🚀🚀"])("%j has no key", (name) => {
  expect(traitKey(name)).toBe("");
});
