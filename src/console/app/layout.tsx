import type { ComponentChildren } from "preact";
import { useLocation } from "preact-iso";
import { useMay, useSession } from "./context.js";
import { roleName, type Rpc } from "./permissions.js";

/** The pages, each with the RPC that lists what it shows: a principal that may not call it does not see the link. */
const links: Array<[string, string, Rpc]> = [
  ["/console/", "Overview", "DeliveryService/GetDestinationStats"],
  ["/console/sources", "Sources", "SourceService/ListSources"],
  ["/console/destinations", "Destinations", "DestinationService/ListDestinations"],
  ["/console/deliveries", "Deliveries", "DeliveryService/ListDeliveries"],
  ["/console/live", "Live", "DeliveryService/ListDeliveries"],
  ["/console/audiences", "Audiences", "AudienceService/ListAudiences"],
  ["/console/profiles", "Profiles", "ProfileService/SearchProfiles"],
  ["/console/deletions", "Deletions", "DeletionService/ListDeletionRequests"],
  ["/console/plans", "Tracking plans", "TrackingPlanService/GetTrackingPlan"],
  ["/console/tokens", "Tokens", "TokenService/ListTokens"],
  ["/console/audit", "Audit log", "AuditService/ListAuditEvents"],
  ["/console/users", "Users", "AccessService/ListUsers"],
];

function isCurrent(path: string, href: string): boolean {
  return href === "/console/" ? path === href : path === href || path.startsWith(`${href}/`);
}

export function Layout(props: { children: ComponentChildren }) {
  const { path } = useLocation();
  const { signOut, principal } = useSession();
  const may = useMay();
  return (
    <div class="shell">
      <header class="top">
        <span class="brand">Waypost</span>
        <nav aria-label="Main">
          {links
            .filter(([, , rpc]) => may(rpc))
            .map(([href, label]) => (
              <a key={href} href={href} aria-current={isCurrent(path, href) ? "page" : undefined}>
                {label}
              </a>
            ))}
        </nav>
        <span class="who" title={`Signed in as ${principal.name}`}>
          {principal.name} ({roleName(principal.role)})
        </span>
        <button type="button" class="quiet" onClick={() => signOut()}>
          Sign out
        </button>
      </header>
      <main>{props.children}</main>
    </div>
  );
}
