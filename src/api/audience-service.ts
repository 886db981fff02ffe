import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type pg from "pg";
import { AudienceService } from "../../gen/waypost/v1/audience_pb.js";
import type { Clock } from "../clock.js";
import type { Ingestor } from "../ingest/ingestor.js";

export interface AudienceServiceOptions {
  pool: pg.Pool;
  clock: Clock;
  ingestor: Ingestor;
}

/** AudienceService. Not yet implemented (issue 4). */
export function createAudienceService(_options: AudienceServiceOptions): Partial<ServiceImpl<typeof AudienceService>> {
  return {
    createAudience() {
      throw new ConnectError("not implemented yet", Code.Unimplemented);
    },
  };
}
