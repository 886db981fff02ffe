import type { Source } from "../../../../gen/waypost/v1/source_pb.js";
import { DataTable, ErrorMessage } from "../components.js";
import { useLoad } from "../context.js";
import { Pager, usePageTokens } from "../pager.js";
import { allSources } from "../paging.js";
import { UserRow } from "./user-row.js";

const pageSize = 50;

/**
 * The people who have signed in through the identity provider (users:read):
 * role, sources, whether disabled, last sign-in; with users:write, a role
 * to save, Disable / Enable and Sign out everywhere on each.
 */
export function UsersView() {
  const pages = usePageTokens("");
  const { pageToken } = pages;
  const page = useLoad((api) => api.access.listUsers({ pageSize, pageToken }), [pageToken]);
  const sources = useLoad((api) => allSources(api).catch(() => [] as Source[]), []);
  return (
    <section>
      <h1>Users</h1>
      <p class="hint">
        People appear here after their first sign-in through the identity provider. A disabled person's sessions and tokens stop working at
        their next request.
      </p>
      <ErrorMessage error={page.error} />
      <DataTable
        label="Users"
        columns={["Email", "Name", "Role", "Sources", "State", "Last sign-in", "Actions"]}
        items={page.data?.users}
        empty="Nobody has signed in through the identity provider yet."
        row={(u) => <UserRow key={u.id} user={u} sources={sources.data ?? []} onChanged={page.reload} />}
      />
      <Pager pages={pages} nextPageToken={page.data?.nextPageToken} />
    </section>
  );
}
