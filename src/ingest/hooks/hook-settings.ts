// Placeholder copied from the shared contract until the sources piece lands
// (its version replaces this file on merge).
export type HookVerifierName = "none" | "standard_webhooks" | "stripe" | "github" | "shopify" | "hmac" | "basic" | "token";
export interface HookSettings {
  verifier: HookVerifierName;
  secret: string;
  transform: string;
  idempotencyKey: string;
  response: { status: number; contentType: string; body: string };
  hmac?: { header: string; algorithm: "sha1" | "sha256" | "sha512"; encoding: "hex" | "base64"; prefix: string };
  tokenHeader: string;
  maxRequestsPerSecond: number;
}
