import type { AttemptResult } from "../../../db/job-table/index.js";
import type { IntegrationDestinationSettings } from "../../../integrations/integration-settings.js";
import type { DeliveryContext, DestinationOf, KindDelivery } from "../kind.js";

/** An integration destination as the delivery loop holds it. */
export type IntegrationDestination = DestinationOf<"integration", IntegrationDestinationSettings>;

/**
 * A stand-in until running the catalog's actions lands: every delivery fails
 * at once, saying so, rather than being retried or reported delivered.
 */
export function createIntegrationDelivery(context: DeliveryContext): KindDelivery<IntegrationDestination> {
  const label = (destination: IntegrationDestination) => `integration:${destination.integration.slug}`;
  return {
    async deliver(_job, destination): Promise<AttemptResult[]> {
      return [
        {
          urlIndex: 0,
          url: label(destination),
          attemptedAt: context.clock.now(),
          outcome: "permanent",
          statusCode: null,
          error: "integration delivery is not built yet",
          latencyMs: 0,
          responseBody: null,
        },
      ];
    },
    label,
    async close() {},
  };
}
