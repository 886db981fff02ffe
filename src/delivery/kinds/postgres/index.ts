import { DestinationKind } from "../../../../gen/waypost/v1/destination_pb.js";
import { defaultWarehouseConfig } from "../../../config.js";
import { cachedIdentity } from "../../../warehouse/ownership.js";
import { defineKind } from "../kind.js";
import { createWarehouseKind } from "./delivery.js";
import { postgresSettings } from "./settings.js";

/**
 * Postgres warehouses: calls are loaded, in batches, into tables of a
 * Postgres database in the analytics-warehouse layout (docs/warehouse.md).
 */
export const postgresKind = defineKind({
  name: "postgres",
  label: "Postgres",
  proto: DestinationKind.POSTGRES,
  settings: postgresSettings,
  createDelivery: ({ config, clock, logger, metrics, pool }) =>
    createWarehouseKind({
      config: config.warehouse ?? defaultWarehouseConfig,
      clock,
      logger,
      metrics,
      ownDatabase: cachedIdentity(pool),
    }),
});
