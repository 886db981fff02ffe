/**
 * What one transform may return and report: routing's limits and a webhook
 * source's transform share them (routing/filter-limits.ts reads them from here,
 * because the sandbox sits below every wing that runs a transform).
 */
export const sandboxLimits = {
  /** A transform's result, in bytes: the size limit of one call. */
  maxResultBytes: 32 * 1024,
  /** The start of a transform's error kept on the attempt. */
  maxErrorBytes: 1024,
} as const;
