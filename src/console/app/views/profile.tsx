import { toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import type { ComponentChild } from "preact";
import { useEffect } from "preact/hooks";
import { useLocation } from "preact-iso";
import type { Profile, ProfileTrait } from "../../../../gen/waypost/v1/profile_pb.js";
import { MessageLink } from "../call-links.js";
import { DataTable, ErrorMessage } from "../components.js";
import { useLoad } from "../context.js";
import { formatTime } from "../format.js";
import { ProfileHistory, ProfileTimeline } from "./profile-timeline.js";

/**
 * One person: their identifiers, traits (with when and by which call each
 * was set), calls per event and the profiles merged into theirs; then the
 * timeline of their calls across every id, and what happened to the
 * profile. A merged profile's id opens the profile it merged into.
 */
export function ProfileView(props: { params: { id: string } }) {
  const id = props.params.id;
  const { route } = useLocation();
  const loaded = useLoad(async (api) => (await api.profiles.getProfile({ profileId: id })).profile, [id]);
  const profile = loaded.data;
  const merged = profile !== undefined && profile.id !== id;
  useEffect(() => {
    if (merged) route(`/console/profiles/${profile.id}`, true);
  }, [merged, profile, route]);
  return (
    <section>
      <h1>Profile {id}</h1>
      <p>
        <a href="/console/profiles">Search profiles</a>
      </p>
      <ErrorMessage error={loaded.error} />
      {profile && !merged && (
        <>
          <Summary profile={profile} />
          <Identifiers profile={profile} />
          <Traits profile={profile} />
          <EventCounts profile={profile} />
          <ProfileTimeline profileId={profile.id} />
          <ProfileHistory profileId={profile.id} />
        </>
      )}
    </section>
  );
}

function Summary(props: { profile: Profile }) {
  const p = props.profile;
  const rows: Array<[string, ComponentChild]> = [
    ["Calls", String(p.calls)],
    ["First seen", formatTime(p.firstSeenTime)],
    ["Last seen", formatTime(p.lastSeenTime)],
    [
      "Merged profiles",
      p.mergedIds.length === 0
        ? "none"
        : p.mergedIds.map((merged, i) => (
            <span key={merged}>
              {i > 0 && ", "}
              <code>{merged}</code>
            </span>
          )),
    ],
  ];
  return <dl class="props">{rows.map(([k, v]) => [<dt key={`${k}-t`}>{k}</dt>, <dd key={`${k}-d`}>{v}</dd>])}</dl>;
}

function Identifiers(props: { profile: Profile }) {
  return (
    <>
      <h2>Identifiers</h2>
      <DataTable
        label="Identifiers"
        columns={["Type", "Value", "First seen"]}
        items={props.profile.identifiers}
        empty="No identifiers."
        row={(i) => (
          <tr key={`${i.type}:${i.value}`}>
            <td>{i.type}</td>
            <td>
              <code>{i.value}</code>
            </td>
            <td>{formatTime(i.firstSeenTime)}</td>
          </tr>
        )}
      />
    </>
  );
}

const traitValueText = (trait: ProfileTrait) => (trait.value ? JSON.stringify(toJson(ValueSchema, trait.value)) : "null");

function Traits(props: { profile: Profile }) {
  const traits = Object.entries(props.profile.traits).sort(([a], [b]) => a.localeCompare(b));
  return (
    <>
      <h2>Traits</h2>
      <DataTable
        label="Traits"
        columns={["Trait", "Value", "Set", "By message"]}
        items={traits}
        empty="No traits: no identify call set any."
        row={([key, trait]) => (
          <tr key={key}>
            <td>{key}</td>
            <td>
              <code>{traitValueText(trait)}</code>
            </td>
            <td>{formatTime(trait.setTime)}</td>
            <td>
              <MessageLink messageId={trait.messageId} />
            </td>
          </tr>
        )}
      />
    </>
  );
}

function EventCounts(props: { profile: Profile }) {
  const counts = Object.entries(props.profile.eventCounts).sort(([a, x], [b, y]) => (x === y ? a.localeCompare(b) : x > y ? -1 : 1));
  return (
    <>
      <h2>Calls by event</h2>
      <p class="hint">A track call by its event's name; other calls by their type.</p>
      <DataTable
        label="Calls by event"
        columns={["Event", "Calls"]}
        items={counts}
        empty="No calls."
        row={([name, count]) => (
          <tr key={name}>
            <td>{name}</td>
            <td class="num">{String(count)}</td>
          </tr>
        )}
      />
    </>
  );
}
