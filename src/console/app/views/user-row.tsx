import { useEffect, useState } from "preact/hooks";
import type { Role, User } from "../../../../gen/waypost/v1/access_pb.js";
import type { Source } from "../../../../gen/waypost/v1/source_pb.js";
import { ErrorMessage } from "../components.js";
import { useAction, useMay } from "../context.js";
import { formatTime } from "../format.js";
import { roleName, roleNames } from "../permissions.js";

/**
 * One person: a role select and Save, Disable or Enable, and Sign out
 * everywhere, with users:write. A role the provider's group claim sets
 * (at every sign-in) is shown, not offered for change.
 */
export function UserRow(props: { user: User; sources: Source[]; onChanged(): void }) {
  const u = props.user;
  const may = useMay();
  const action = useAction(props.onChanged);
  const [role, setRole] = useState<Role>(u.role);
  useEffect(() => setRole(u.role), [u.role]);
  const [notice, setNotice] = useState<string | undefined>();
  const writable = may("AccessService/UpdateUser");
  const sourceName = (id: string) => props.sources.find((s) => s.id === id)?.name ?? id;

  const saveRole = () =>
    action
      .run((api) => api.access.updateUser({ user: { id: u.id, role }, updateMask: "role" }))
      .then((done) => {
        if (done) setNotice(`Saved: ${roleName(role)}.`);
      });
  const setDisabled = (disabled: boolean) =>
    disabled
      ? action.confirmRun(`Disable ${u.email}? Their sessions end now and their tokens stop working.`, (api) =>
          api.access.updateUser({ user: { id: u.id, disabled }, updateMask: "disabled" }),
        )
      : action.run((api) => api.access.updateUser({ user: { id: u.id, disabled }, updateMask: "disabled" }));
  async function signOutEverywhere() {
    const done = await action.confirmRun(`Sign ${u.email} out of every session?`, (api) => api.access.revokeSessions({ userId: u.id }));
    if (done) setNotice(`${done.revoked} ${done.revoked === 1 ? "session" : "sessions"} ended.`);
  }

  return (
    <tr>
      <td>{u.email}</td>
      <td>{u.name}</td>
      <td>
        {u.roleFromClaim || !writable ? (
          <>
            {roleName(u.role)}
            {u.roleFromClaim && <div class="hint">Set by the identity provider's groups at every sign-in: change it there.</div>}
          </>
        ) : (
          <span class="inline">
            <select aria-label={`Role of ${u.email}`} value={String(role)} onChange={(e) => setRole(Number(e.currentTarget.value) as Role)}>
              {roleNames.map(([value, label]) => (
                <option key={value} value={String(value)}>
                  {label}
                </option>
              ))}
            </select>{" "}
            <button type="button" aria-label={`Save role of ${u.email}`} disabled={action.busy || role === u.role} onClick={saveRole}>
              Save
            </button>
          </span>
        )}
      </td>
      <td>{u.sourceIds.length > 0 ? u.sourceIds.map(sourceName).join(", ") : "all"}</td>
      <td>{u.disabled ? "disabled" : "active"}</td>
      <td>{u.lastSignInTime ? formatTime(u.lastSignInTime) : "never"}</td>
      <td class="actions">
        {writable && (
          <>
            <button
              type="button"
              class={u.disabled ? undefined : "danger"}
              aria-label={`${u.disabled ? "Enable" : "Disable"} ${u.email}`}
              disabled={action.busy}
              onClick={() => setDisabled(!u.disabled)}
            >
              {u.disabled ? "Enable" : "Disable"}
            </button>
            <button type="button" aria-label={`Sign out everywhere: ${u.email}`} disabled={action.busy} onClick={signOutEverywhere}>
              Sign out everywhere
            </button>
          </>
        )}
        <ErrorMessage error={action.error} />
        {notice && (
          <p class="hint" role="status">
            {notice}
          </p>
        )}
      </td>
    </tr>
  );
}
