import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { ApiToken } from "../../../../gen/waypost/v1/access_pb.js";
import type { Source } from "../../../../gen/waypost/v1/source_pb.js";
import { DataTable, ErrorMessage } from "../components.js";
import { useAction, useLoad, useSession } from "../context.js";
import { formatTime } from "../format.js";
import { Pager, usePageTokens } from "../pager.js";
import { allSources } from "../paging.js";
import { holds, mayCreateTokens, mayRevokeToken, roleName } from "../permissions.js";
import { TokenForm } from "./token-form.js";

const pageSize = 50;

const expired = (t: ApiToken) => t.expireTime !== undefined && timestampDate(t.expireTime) <= new Date();

/**
 * API tokens: every token with tokens:read, else one's own; revoked and
 * expired ones too. Create token (the secret shown once) and Revoke, as
 * far as the principal may.
 */
export function TokensView() {
  const { principal } = useSession();
  const pages = usePageTokens("");
  const { pageToken } = pages;
  const page = useLoad((api) => api.tokens.listTokens({ includeInactive: true, pageSize, pageToken }), [pageToken]);
  // Names for the Sources column and the form; a principal that may not list sources sees ids.
  const sources = useLoad((api) => allSources(api).catch(() => [] as Source[]), []);
  const action = useAction(page.reload);
  const sourceName = (id: string) => sources.data?.find((s) => s.id === id)?.name ?? id;
  const revoke = (t: ApiToken) =>
    action.confirmRun(`Revoke the token ${t.name} (${t.prefix}…)? Whatever uses it is refused from its next call.`, (api) =>
      api.tokens.revokeToken({ id: t.id }),
    );

  return (
    <section>
      <h1>Tokens</h1>
      <p class="hint">
        {holds(principal, "tokens:read") ? "Every API token." : "Your API tokens."} A token is sent as{" "}
        <code>Authorization: Bearer wpt_…</code> to the admin API and the <code>waypost</code> command, or typed on the console's sign-in
        page. A person's token never does more than its person may now.
      </p>
      {mayCreateTokens(principal) ? (
        <TokenForm sources={sources.data ?? []} onCreated={page.reload} />
      ) : (
        <p class="hint">Tokens are created by people signed in through the identity provider, or with the scope tokens:write.</p>
      )}
      <ErrorMessage error={action.error ?? page.error} />
      <DataTable
        label="Tokens"
        columns={["Name", "Prefix", "Access", "Sources", "Owner", "Expires", "Last used", "Revoked", "Actions"]}
        items={page.data?.tokens}
        empty="No tokens yet."
        row={(t) => (
          <tr key={t.id}>
            <td>{t.name}</td>
            <td>
              <code>{t.prefix}…</code>
            </td>
            <td>{t.scopes.length > 0 ? t.scopes.join(", ") : roleName(t.role)}</td>
            <td>{t.sourceIds.length > 0 ? t.sourceIds.map(sourceName).join(", ") : "all"}</td>
            <td>{t.serviceAccount ? "service account" : <code title="User ID">{t.userId}</code>}</td>
            <td>{t.expireTime ? formatTime(t.expireTime) : "never"}</td>
            <td>
              {t.lastUseTime ? formatTime(t.lastUseTime) : "never"}
              {t.lastUseAddress && <div class="hint">from {t.lastUseAddress}</div>}
            </td>
            <td>{t.revokeTime ? formatTime(t.revokeTime) : expired(t) ? "expired" : "–"}</td>
            <td class="actions">
              {!t.revokeTime && !expired(t) && mayRevokeToken(principal, t) && (
                <button type="button" class="danger" aria-label={`Revoke ${t.name}`} disabled={action.busy} onClick={() => revoke(t)}>
                  Revoke
                </button>
              )}
            </td>
          </tr>
        )}
      />
      <Pager pages={pages} nextPageToken={page.data?.nextPageToken} />
    </section>
  );
}
