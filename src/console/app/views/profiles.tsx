import { Code, ConnectError } from "@connectrpc/connect";
import { useEffect, useState } from "preact/hooks";
import { useLocation } from "preact-iso";
import type { Profile } from "../../../../gen/waypost/v1/profile_pb.js";
import { DataTable, ErrorMessage } from "../components.js";
import { useLoad } from "../context.js";
import { formatTime } from "../format.js";
import { filterFromQueryOf, filterToQueryOf, type QueryFilter } from "../query-filter.js";

/** The page's address: a search (prefix and type, or trait and value), or an identifier to open the profile of. */
const keys = ["identifier", "prefix", "type", "trait", "value"] as const;
type ProfileQuery = QueryFilter<(typeof keys)[number]>;
const noQuery: ProfileQuery = { identifier: "", prefix: "", type: "", trait: "", value: "" };

/** The most profiles a search shows. */
const pageSize = 50;
/** The most identifiers a result row lists. */
const listedIdentifiers = 6;

/**
 * Profiles: search by an identifier's prefix (of a type) or a trait's
 * value, each result linked to its profile. `?identifier=TYPE:VALUE` (the
 * Profile links of calls) opens the profile holding it.
 */
export function ProfilesView() {
  const { query, path, route } = useLocation();
  const search = filterFromQueryOf(keys, query);
  if (search.identifier) return <IdentifierLookup identifier={search.identifier} />;
  const apply = (next: Partial<ProfileQuery>) => route(`${path}${filterToQueryOf(keys, { ...noQuery, ...next })}`);
  return (
    <section>
      <h1>Profiles</h1>
      <p class="hint">
        One person across every id they used, as identity resolution joined them. It runs a moment behind ingest: a call just received may
        not be in a profile yet.
      </p>
      <SearchForms key={filterToQueryOf(keys, search)} search={search} onApply={apply} />
      <SearchResults search={search} />
    </section>
  );
}

function SearchForms(props: { search: ProfileQuery; onApply(next: Partial<ProfileQuery>): void }) {
  const [draft, setDraft] = useState(props.search);
  const set = (key: keyof ProfileQuery) => (e: { currentTarget: { value: string } }) =>
    setDraft((d) => ({ ...d, [key]: e.currentTarget.value }));
  const submit = (next: Partial<ProfileQuery>) => (e: Event) => {
    e.preventDefault();
    props.onApply(next);
  };
  return (
    <>
      {/* biome-ignore lint/a11y/useSemanticElements: role="search" on the form is the same landmark as a <search> element */}
      <form class="filters" role="search" aria-label="Search by identifier" onSubmit={submit({ prefix: draft.prefix, type: draft.type })}>
        <label>
          Identifier starts with
          <input value={draft.prefix} onInput={set("prefix")} required />
        </label>
        <label>
          Identifier type
          <input value={draft.type} onInput={set("type")} placeholder="any: user_id, anonymous_id, email…" />
        </label>
        <div class="buttons">
          <button type="submit">Search identifiers</button>
        </div>
      </form>
      {/* biome-ignore lint/a11y/useSemanticElements: role="search" on the form is the same landmark as a <search> element */}
      <form class="filters" role="search" aria-label="Search by trait" onSubmit={submit({ trait: draft.trait, value: draft.value })}>
        <label>
          Trait
          <input value={draft.trait} onInput={set("trait")} required placeholder="plan" />
        </label>
        <label>
          Trait value
          <input value={draft.value} onInput={set("value")} placeholder='pro, 42, or JSON: "pro"' />
        </label>
        <div class="buttons">
          <button type="submit">Search traits</button>
        </div>
      </form>
    </>
  );
}

function SearchResults(props: { search: ProfileQuery }) {
  const { prefix, type, trait, value } = props.search;
  const searching = prefix !== "" || trait !== "";
  const found = useLoad(
    async (api) => {
      if (!searching) return undefined;
      const request = prefix ? { identifierPrefix: prefix, identifierType: type } : { traitKey: trait, traitValue: value };
      return (await api.profiles.searchProfiles({ ...request, pageSize })).profiles;
    },
    [prefix, type, trait, value],
  );
  if (!searching) return <p class="hint">Search by the start of an identifier (a user id, an anonymous id, an email), or by a trait.</p>;
  return (
    <>
      <ErrorMessage error={found.error} />
      <DataTable
        label="Profiles"
        columns={["Profile", "Identifiers", "Calls", "First seen", "Last seen"]}
        items={found.loading ? undefined : found.data}
        empty="No profile matches."
        row={(p) => <ProfileRow key={p.id} profile={p} />}
      />
      {found.data?.length === pageSize && <p class="hint">The first {pageSize} found: narrow the search to see others.</p>}
    </>
  );
}

function ProfileRow(props: { profile: Profile }) {
  const p = props.profile;
  const more = p.identifiers.length - listedIdentifiers;
  return (
    <tr>
      <td>
        <a href={`/console/profiles/${p.id}`}>
          <code>{p.id}</code>
        </a>
      </td>
      <td>
        {p.identifiers.slice(0, listedIdentifiers).map((i) => (
          <div key={`${i.type}:${i.value}`}>
            <code>
              {i.type}:{i.value}
            </code>
          </div>
        ))}
        {more > 0 && <div class="hint">and {more} more</div>}
      </td>
      <td class="num">{String(p.calls)}</td>
      <td>{formatTime(p.firstSeenTime)}</td>
      <td>{formatTime(p.lastSeenTime)}</td>
    </tr>
  );
}

/** `?identifier=TYPE:VALUE`: opens the profile holding it, or says there is none (yet). */
function IdentifierLookup(props: { identifier: string }) {
  const { route } = useLocation();
  const colon = props.identifier.indexOf(":");
  const type = colon > 0 ? props.identifier.slice(0, colon) : "user_id";
  const value = colon > 0 ? props.identifier.slice(colon + 1) : props.identifier;
  const found = useLoad(
    (api) =>
      api.profiles.getProfile({ identifier: { type, value } }).then(
        (r) => r.profile?.id ?? null,
        (error: unknown) => {
          if (error instanceof ConnectError && error.code === Code.NotFound) return null;
          throw error;
        },
      ),
    [type, value],
  );
  const id = found.data;
  useEffect(() => {
    if (id) route(`/console/profiles/${id}`, true);
  }, [id, route]);
  return (
    <section>
      <h1>Profile of {`${type}:${value}`}</h1>
      <ErrorMessage error={found.error} />
      {found.loading && <p role="status">Finding the profile…</p>}
      {!found.loading && id === null && (
        <>
          <p role="status">
            No profile yet holds <code>{`${type}:${value}`}</code>: identity resolution runs a moment behind ingest, so a call just received
            may not be in a profile yet.
          </p>
          <p>
            <button type="button" onClick={found.reload}>
              Look again
            </button>{" "}
            <a href={`/console/profiles?prefix=${encodeURIComponent(value)}`}>Search profiles</a>
          </p>
        </>
      )}
    </section>
  );
}
