/** Limits that ingestion enforces (docs/limits.md). */
export const limits = {
  /** One call's JSON encoding, in bytes. */
  maxCallBytes: 32 * 1024,
  /** One request (or batch), in bytes. */
  maxRequestBytes: 500 * 1024,
  /** One request to a webhook source's inbound URL, in bytes, as sent (512 KB). */
  maxHookBodyBytes: 512 * 1024,
  /**
   * One call a webhook source's request makes (528 KB): the largest body
   * it may have been sent, plus room for the call around it, so the default
   * mapping carries any body that was accepted. SDK calls keep 32 KB.
   */
  maxHookCallBytes: 528 * 1024,
  /** Nesting of objects and arrays inside context, properties and traits. */
  maxDepth: 64,
  /** messageId, a client's dedup key. */
  maxMessageIdLength: 255,
  /** userId, anonymousId, previousId, groupId, event, name, category. */
  maxIdentifierLength: 1024,
  /**
   * Messages in one request. SDK batches hold tens to a few hundred; 500 KB
   * of the smallest valid calls (about 40 bytes each) would be over 12,000,
   * each costing validation work, so the count is capped well above real
   * batches and well below that.
   */
  maxBatchMessages: 2_500,
  /** Rejections listed in an answer; the count of all of them is always given. */
  maxListedRejections: 100,
} as const;

/** The reason a call over its size limit is refused. */
export function callTooLarge(size: number, limit: number): string {
  return `message is ${size} bytes, over the limit of ${limit} bytes (${limit / 1024} KB) per call`;
}
