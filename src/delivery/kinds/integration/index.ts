import { DestinationKind } from "../../../../gen/waypost/v1/destination_pb.js";
import type { IntegrationDestinationSettings } from "../../../catalog/integration-settings.js";
import { defineKind, type KindSettings } from "../kind.js";
import { createIntegrationDelivery } from "./delivery.js";
import { refusePrivateHosts } from "./private-hosts.js";
import { integrationRouting } from "./routing.js";
import { integrationSettingsView, validateIntegrationSettings } from "./settings.js";
import { testIntegrationDraft } from "./test-calls.js";

const settings: KindSettings<IntegrationDestinationSettings> = {
  fields: [
    {
      path: "integration",
      name: "integration",
      describe: "integration settings",
      moves: true,
      given: (input) => input.integration !== undefined,
    },
  ],
  read(input, { paths, current, guard }) {
    if (current && !paths.has("integration")) return current;
    const read = validateIntegrationSettings("destination.integration", input.integration, current);
    refusePrivateHosts("destination.integration", read, guard);
    return read;
  },
  toProto: (settings) => ({ integration: integrationSettingsView(settings) }),
  toRow: (settings) => ({ integration: settings }),
  // A row without settings (none is stored so) reads as no entry: deliveries fail naming it.
  fromRow: (row) => row.integration ?? { slug: "", settings: {}, subscriptions: [] },
};

/**
 * A vendor tool from the catalog Waypost hosts (docs/integrations.md): each
 * call runs the actions of the subscriptions it matches, with the entry's
 * settings, through Waypost's outbound client. Its subscriptions route
 * calls (a call matching none gets no delivery), each is a part of the
 * call that must succeed, and TestDestination shows the requests they
 * would send.
 */
export const integrationKind = defineKind({
  name: "integration",
  label: "catalog integration",
  proto: DestinationKind.INTEGRATION,
  settings,
  requestsInAttempts: true,
  completion: "every-part",
  routing: integrationRouting,
  test: testIntegrationDraft,
  createDelivery: createIntegrationDelivery,
});
