/** The limits ingestion enforces (listed in docs/api.md#validation-and-limits). */
export const limits = {
  /** One call's JSON encoding, in bytes. */
  maxCallBytes: 32 * 1024,
  /** One request (or batch), in bytes. */
  maxRequestBytes: 500 * 1024,
  /** Nesting of objects and arrays inside context, properties and traits. */
  maxDepth: 64,
  /** messageId, a client's dedup key. */
  maxMessageIdLength: 255,
  /** userId, anonymousId, previousId, groupId, event, name, category. */
  maxIdentifierLength: 1024,
} as const;
