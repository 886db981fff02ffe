import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { useState } from "preact/hooks";
import { Role } from "../../../../gen/waypost/v1/access_pb.js";
import type { Source } from "../../../../gen/waypost/v1/source_pb.js";
import { ErrorMessage, SecretOnce } from "../components.js";
import { useSession } from "../context.js";
import { useFormSubmit } from "../form-submit.js";
import { FieldError, type FieldErrors } from "../field-error.js";
import { everyTokenIsServiceAccount, holds, rolesUpTo } from "../permissions.js";

/** The end of the chosen day (UTC): a token made to expire "on" a date works through it. */
const endOfDay = (date: string) => new Date(`${date}T23:59:59Z`);

/**
 * Create token: a name, a role no higher than the principal's own, the
 * sources it may reach (none chosen: all the creator reaches), an optional
 * expiry, and (with tokens:write) whether it is a service account's. The
 * secret is shown once; Waypost keeps only its hash.
 */
export function TokenForm(props: { sources: Source[]; onCreated(): void }) {
  const { api, principal } = useSession();
  const roles = rolesUpTo(principal.role);
  const [name, setName] = useState("");
  const [role, setRole] = useState<Role>(roles[0]?.[0] ?? Role.VIEWER);
  const [sourceIds, setSourceIds] = useState<string[]>([]);
  const [expires, setExpires] = useState("");
  const forced = everyTokenIsServiceAccount(principal);
  const [serviceAccount, setServiceAccount] = useState(forced);
  const { errors, formError, busy, submit } = useFormSubmit("token");
  const [created, setCreated] = useState<{ name: string; secret: string } | undefined>();

  async function create(event: Event) {
    event.preventDefault();
    const problems: FieldErrors = expires !== "" && endOfDay(expires) <= new Date() ? { expireTime: "is in the past" } : {};
    await submit(problems, async () => {
      const response = await api.tokens.createToken({
        token: {
          name: name.trim(),
          role,
          sourceIds,
          serviceAccount: forced || serviceAccount,
          ...(expires !== "" ? { expireTime: timestampFromDate(endOfDay(expires)) } : {}),
        },
      });
      setCreated({ name: response.token?.name ?? name, secret: response.secret });
      setName("");
      setSourceIds([]);
      setExpires("");
      props.onCreated();
    });
  }

  return (
    <>
      <form class="stacked" onSubmit={create} aria-label="Create token">
        <ErrorMessage error={formError} />
        <div class="field">
          <label for="token-name">Name</label>
          <input id="token-name" value={name} onInput={(e) => setName(e.currentTarget.value)} required maxLength={200} />
          <FieldError errors={errors} field="name" />
        </div>
        <div class="field">
          <label for="token-role">Role</label>
          <select id="token-role" value={String(role)} onChange={(e) => setRole(Number(e.currentTarget.value) as Role)}>
            {roles.map(([value, label]) => (
              <option key={value} value={String(value)}>
                {label}
              </option>
            ))}
          </select>
          <FieldError errors={errors} field="role" />
        </div>
        <div class="field">
          <label for="token-sources">Sources</label>
          <select
            id="token-sources"
            multiple
            aria-describedby="token-sources-hint"
            onChange={(e) => setSourceIds([...e.currentTarget.selectedOptions].map((option) => option.value))}
          >
            {props.sources.map((s) => (
              <option key={s.id} value={s.id} selected={sourceIds.includes(s.id)}>
                {s.name}
              </option>
            ))}
          </select>
          <span id="token-sources-hint" class="hint">
            None chosen: every source you reach.
          </span>
          <FieldError errors={errors} field="sourceIds" prefix />
        </div>
        <div class="field">
          <label for="token-expires">Expires (optional)</label>
          <input id="token-expires" type="date" value={expires} onInput={(e) => setExpires(e.currentTarget.value)} />
          <FieldError errors={errors} field="expireTime" />
        </div>
        {holds(principal, "tokens:write") && (
          <label class="check">
            <input
              type="checkbox"
              checked={forced || serviceAccount}
              disabled={forced}
              onChange={(e) => setServiceAccount(e.currentTarget.checked)}
            />{" "}
            Service account
            <span class="hint">
              {forced ? " (every token the admin token makes is one)" : " (no person behind it: it outlives anyone's access)"}
            </span>
          </label>
        )}
        <div class="form-actions">
          <button type="submit" disabled={busy}>
            Create token
          </button>
        </div>
      </form>
      {created && (
        <SecretOnce
          label={`API token ${created.name}.`}
          value={created.secret}
          note="Waypost keeps only its hash: it will not be shown again."
          onDismiss={() => setCreated(undefined)}
        />
      )}
    </>
  );
}
