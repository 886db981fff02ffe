import type { ComponentChildren } from "preact";
import { useLocation } from "preact-iso";
import { useSession } from "./context.js";

const links: Array<[string, string]> = [
  ["/console/", "Overview"],
  ["/console/sources", "Sources"],
  ["/console/destinations", "Destinations"],
  ["/console/deliveries", "Deliveries"],
  ["/console/live", "Live"],
  ["/console/audiences", "Audiences"],
  ["/console/deletions", "Deletions"],
  ["/console/plans", "Tracking plans"],
];

function isCurrent(path: string, href: string): boolean {
  return href === "/console/" ? path === href : path === href || path.startsWith(`${href}/`);
}

export function Layout(props: { children: ComponentChildren }) {
  const { path } = useLocation();
  const { signOut } = useSession();
  return (
    <div class="shell">
      <header class="top">
        <span class="brand">Waypost</span>
        <nav aria-label="Main">
          {links.map(([href, label]) => (
            <a key={href} href={href} aria-current={isCurrent(path, href) ? "page" : undefined}>
              {label}
            </a>
          ))}
        </nav>
        <button type="button" class="quiet" onClick={() => signOut()}>
          Sign out
        </button>
      </header>
      <main>{props.children}</main>
    </div>
  );
}
