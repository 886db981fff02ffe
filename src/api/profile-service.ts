import { create, fromJson, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { timestampFromDate, ValueSchema } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { type Profile, ProfileSchema, type ProfileService } from "../../gen/waypost/v1/profile_pb.js";
import {
  liveProfileId,
  type ProfileRow,
  profileFamily,
  searchProfilesByIdentifier,
  searchProfilesByTrait,
  selectProfile,
  selectProfileEvents,
  selectLiveProfile,
  selectProfileHistory,
} from "../db/queries/identity/profiles.js";
import type { Queryable } from "../db/pool.js";
import { invalidArgument, notFound, requireUuid } from "./errors.js";
import { decodePageToken, encodePageToken, listPage, pageSize } from "./paging.js";

export interface ProfileServiceOptions {
  pool: Queryable;
}

function profileToProto(row: ProfileRow): Profile {
  return create(ProfileSchema, {
    id: row.id,
    mergedIds: row.merged_ids,
    identifiers: row.identifiers.map((identifier) => ({
      type: identifier.type,
      value: identifier.value,
      firstSeenTime: timestampFromDate(new Date(identifier.first_seen)),
    })),
    traits: Object.fromEntries(
      Object.entries(row.traits).map(([key, trait]) => [
        key,
        {
          value: fromJson(ValueSchema, trait.value as JsonValue),
          setTime: timestampFromDate(new Date(trait.at)),
          messageId: trait.messageId,
        },
      ]),
    ),
    eventCounts: Object.fromEntries(Object.entries(row.event_counts).map(([key, count]) => [key, BigInt(count)])),
    calls: BigInt(row.calls),
    firstSeenTime: timestampFromDate(row.first_seen),
    lastSeenTime: timestampFromDate(row.last_seen),
  });
}

const bounded = (field: string, value: string, max = 256) => {
  if (value.length > max) throw invalidArgument(field, `is longer than ${max} characters`);
  return value;
};

/** A trait's value as the search takes it: JSON text, or a bare word as a string. */
function traitValueOf(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** Profiles: one person across every id (docs/profiles.md). */
export function createProfileService(options: ProfileServiceOptions): ServiceImpl<typeof ProfileService> {
  const { pool } = options;

  /** Which profile a request names: by id, or by one of its identifiers (checked, not yet looked up). */
  function named(req: {
    profileId: string;
    identifier?: { type: string; value: string } | undefined;
  }): { profileId: string } | { type: string; value: string } {
    if (req.profileId) return { profileId: requireUuid("profileId", req.profileId) };
    const identifier = req.identifier;
    if (!identifier?.type || !identifier.value) throw invalidArgument("identifier", "give profileId, or an identifier's type and value");
    return { type: bounded("identifier.type", identifier.type, 40), value: bounded("identifier.value", identifier.value) };
  }

  const notFoundAs = (by: { profileId: string } | { type: string; value: string }) =>
    "profileId" in by ? notFound("profile", by.profileId) : notFound("profile with identifier", `${by.type}:${by.value}`);

  async function live(req: { profileId: string; identifier?: { type: string; value: string } | undefined }): Promise<string> {
    const by = named(req);
    const id = await liveProfileId(pool, by);
    if (!id) throw notFoundAs(by);
    return id;
  }

  async function profilesOf(ids: readonly string[]): Promise<Profile[]> {
    const rows = await Promise.all(ids.map((id) => selectProfile(pool, id, 100)));
    return rows.flatMap((row) => (row ? [profileToProto(row)] : []));
  }

  return {
    async getProfile(req) {
      const by = named(req);
      const row = await selectLiveProfile(pool, by);
      if (!row) throw notFoundAs(by);
      return { profile: profileToProto(row) };
    },

    async listProfileEvents(req) {
      const family = await profileFamily(pool, await live({ profileId: req.profileId }));
      const cursor = decodePageToken(req.pageToken);
      if (cursor !== undefined && !/^\d{1,19}$/.test(cursor)) throw invalidArgument("pageToken", "is not a token this server issued");
      const page = await listPage(
        pageSize(req.pageSize),
        (limit) => selectProfileEvents(pool, family, cursor, limit),
        (last) => encodePageToken(last.pk),
      );
      return {
        events: page.rows.map((row) => {
          const body = JSON.parse(row.payload) as JsonObject;
          const name = typeof body.event === "string" ? body.event : typeof body.name === "string" ? body.name : "";
          return {
            messageId: row.message_id,
            sourceId: row.source_id,
            type: row.type,
            name,
            userId: row.user_id ?? "",
            anonymousId: typeof body.anonymousId === "string" ? body.anonymousId : "",
            receiveTime: timestampFromDate(row.received_at),
            body,
          };
        }),
        nextPageToken: page.nextPageToken,
      };
    },

    async searchProfiles(req) {
      const limit = pageSize(req.pageSize, 20, 100);
      if (req.traitKey) {
        const ids = await searchProfilesByTrait(
          pool,
          bounded("traitKey", req.traitKey, 200),
          traitValueOf(bounded("traitValue", req.traitValue, 1000)),
          limit,
        );
        return { profiles: await profilesOf(ids) };
      }
      if (req.identifierPrefix) {
        const ids = await searchProfilesByIdentifier(
          pool,
          bounded("identifierPrefix", req.identifierPrefix),
          req.identifierType || undefined,
          limit,
        );
        return { profiles: await profilesOf(ids) };
      }
      throw invalidArgument("traitKey", "give traitKey and traitValue, or identifierPrefix");
    },

    async listProfileMerges(req) {
      const family = await profileFamily(pool, await live({ profileId: req.profileId }));
      const rows = await selectProfileHistory(pool, family, pageSize(req.pageSize, 100, 1000));
      return {
        merges: rows.map((row) => ({
          time: timestampFromDate(row.at),
          kind: row.kind,
          profileId: row.profile_id,
          mergedProfileId: row.other_profile_id ?? "",
          ...(row.identifier_type ? { identifier: { type: row.identifier_type, value: row.identifier_value ?? "" } } : {}),
          reason: row.reason ?? "",
          messageId: row.message_id ?? "",
        })),
      };
    },
  };
}
