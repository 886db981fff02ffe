import { Webhook } from "standardwebhooks";
import { vi } from "vitest";
import type { ReceivedRequest } from "./receiver.js";

/**
 * Verifies a received request with the reference Standard Webhooks library,
 * as a receiver would at `at` (the library reads the time from Date.now;
 * tests run on a manual clock). Throws the library's error when it refuses.
 */
export function verifyStandardWebhook(secret: string, request: ReceivedRequest, at: Date): unknown {
  const spy = vi.spyOn(Date, "now").mockReturnValue(at.getTime());
  try {
    return new Webhook(secret).verify(request.body, request.headers as Record<string, string>);
  } finally {
    spy.mockRestore();
  }
}
