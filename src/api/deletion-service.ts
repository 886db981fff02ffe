import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type pg from "pg";
import { DeletionService } from "../../gen/waypost/v1/deletion_pb.js";
import type { Clock } from "../clock.js";

export interface DeletionServiceOptions {
  pool: pg.Pool;
  clock: Clock;
}

/** DeletionService. Not yet implemented (issue 4). */
export function createDeletionService(_options: DeletionServiceOptions): Partial<ServiceImpl<typeof DeletionService>> {
  return {
    createDeletionRequest() {
      throw new ConnectError("not implemented yet", Code.Unimplemented);
    },
  };
}
