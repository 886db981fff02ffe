/**
 * The trait key of an audience: the snake_case form of its name (see
 * docs/api.md#audiences-and-computed-traits), e.g. `High Value Users` → `high_value_users`,
 * `VIP-Customers 2024` → `vip_customers_2024`, `Café Lovers` → `cafe_lovers`.
 *
 * Rules, in order:
 * 1. Diacritics are stripped (NFKD, then combining marks dropped), so
 *    `Café` and `Cafe` give the same key; compatibility forms fold too
 *    (`ﬁ` → `fi`, full-width letters → ASCII).
 * 2. Words are split where the case changes, as the common snake_case
 *    libraries do: `HighValue` → `high_value`, `VIPCustomers` →
 *    `vip_customers`. Digits stay attached to the word they touch
 *    (`Top10` → `top10`), so a year or version number is not torn off.
 * 3. Any run of characters that are neither letters nor digits (spaces,
 *    punctuation, symbols, emoji) is one separator; leading and trailing
 *    ones vanish. Letters of other scripts are kept (`日本 Fans` →
 *    `日本_fans`): a trait key is any JSON string.
 * 4. Everything is lower-cased.
 *
 * Returns "" when the name has no letter or digit at all; callers reject it.
 */
export function traitKey(name: string): string {
  const folded = name.normalize("NFKD").replace(/\p{M}+/gu, "");
  const spaced = folded
    // camelCase and digit-to-upper boundaries: "highValue", "2024Users".
    .replace(/([\p{Ll}\p{Nd}])(\p{Lu})/gu, "$1 $2")
    // The end of an acronym: "VIPCustomers" → "VIP Customers".
    .replace(/(\p{Lu})(\p{Lu}\p{Ll})/gu, "$1 $2");
  return spaced
    .split(/[^\p{L}\p{N}]+/u)
    .filter((word) => word !== "")
    .join("_")
    .toLowerCase();
}

/** The longest key stored (the column's check); names are at most 200 characters anyway. */
export const maxTraitKeyLength = 200;
