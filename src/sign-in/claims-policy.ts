import type { OidcConfig, OidcRole } from "../access-config.js";
import { roleRank } from "../access/roles.js";

// What a signed-in person's claims allow: who they are (email, name,
// groups), whether they may sign in at all (allowed domains and groups),
// and which role their groups give. Pure: the callback reads the claims,
// this decides.

/** The person the provider vouched for, read from the ID token's and userinfo's claims. */
export interface Identity {
  subject: string;
  email: string;
  name: string;
  groups: readonly string[];
}

/** A sign-in refused for its claims: the reason is shown to the person and kept in the audit log. */
export class ClaimsRefusal extends Error {
  override name = "ClaimsRefusal";
  /** The email, when the claims had one (the audit row names who was refused). */
  readonly email: string;
  constructor(message: string, email = "") {
    super(message);
    this.email = email;
  }
}

/** Claims are the provider's, but a string is still bounded before it is stored or shown. */
const maxClaimLength = 320;
/** Groups beyond this many are ignored (a provider sends the rest elsewhere: Entra ID's "overage"). */
const maxGroups = 1000;

/**
 * The identity of `claims` (the ID token's, then userinfo's for what it
 * lacks). The email is required: it names the user everywhere. An
 * `email_verified` of false is refused, since an unverified address may be
 * anyone's and allowed domains are judged by it; a provider that sends no
 * `email_verified` at all (Entra ID, Okta's custom claims) vouches for the
 * address by issuing it, and is taken at its word.
 */
export function identityOf(claims: Readonly<Record<string, unknown>>, groupsClaim: string): Identity {
  const subject = claims.sub;
  if (typeof subject !== "string" || subject === "") throw new ClaimsRefusal("the identity provider sent no subject (sub claim)");
  const email = typeof claims.email === "string" ? claims.email.trim().toLowerCase() : "";
  if (!email) throw new ClaimsRefusal("the identity provider sent no email claim: ask for the email scope (WAYPOST_OIDC_SCOPES)");
  if (email.length > maxClaimLength || !/^[^@\s]+@[^@\s]+$/.test(email)) {
    throw new ClaimsRefusal(`the identity provider's email claim is not an email address: ${JSON.stringify(email.slice(0, 80))}`);
  }
  const verified = claims.email_verified;
  if (verified === false || verified === "false") throw new ClaimsRefusal(`email ${email} is not verified by the identity provider`, email);
  const name = typeof claims.name === "string" ? claims.name.slice(0, maxClaimLength) : "";
  return { subject: subject.slice(0, 255), email, name, groups: groupsOf(claims[groupsClaim]) };
}

/** A groups claim: a list of strings (most providers), or one string. Anything else is no groups. */
export function groupsOf(value: unknown): string[] {
  if (typeof value === "string") return value ? [value.slice(0, maxClaimLength)] : [];
  if (!Array.isArray(value)) return [];
  return value
    .slice(0, maxGroups)
    .filter((group): group is string => typeof group === "string" && group !== "")
    .map((group) => group.slice(0, maxClaimLength));
}

/** The domain of an email, lowercased. */
export function emailDomain(email: string): string {
  return email.slice(email.lastIndexOf("@") + 1).toLowerCase();
}

/**
 * Refuses an identity the allowed lists do not let in. Each list that is
 * set must be matched: with both, a person needs an email in an allowed
 * domain and membership of an allowed group. None set: everyone the
 * provider signs in may (the provider's own assignment of users to the
 * application is then the gate).
 */
export function checkAdmission(identity: Identity, oidc: Pick<OidcConfig, "allowedDomains" | "allowedGroups">): void {
  if (oidc.allowedDomains.length > 0) {
    const domain = emailDomain(identity.email);
    if (!oidc.allowedDomains.includes(domain)) {
      throw new ClaimsRefusal(`email domain ${domain} is not allowed (WAYPOST_OIDC_ALLOWED_DOMAINS)`, identity.email);
    }
  }
  if (oidc.allowedGroups.length > 0 && !identity.groups.some((group) => oidc.allowedGroups.includes(group))) {
    throw new ClaimsRefusal(`${identity.email} is in none of the allowed groups (WAYPOST_OIDC_ALLOWED_GROUPS)`, identity.email);
  }
}

/** The highest role the mapping gives any of `groups`, or undefined when it names none of them. */
export function mappedRole(groups: readonly string[], mapping: ReadonlyMap<string, OidcRole>): OidcRole | undefined {
  let best: OidcRole | undefined;
  for (const group of groups) {
    const role = mapping.get(group);
    if (role && (best === undefined || roleRank(role) > roleRank(best))) best = role;
  }
  return best;
}

/**
 * The role a sign-in sets from the claims (`roleFromClaim` of
 * upsertSignedInUser), or undefined to keep the stored one. A mapped group
 * sets its role. Without one, a role that came from a group before falls
 * back to the default role, and stays the provider's to set: leaving the
 * group at the provider must take the role away, and an owner must not be
 * able to hand it back behind the provider's back. A role an owner gave by
 * hand is kept, and a new user gets the default (or owner, for the very
 * first).
 */
export function roleFromClaims(
  groups: readonly string[],
  oidc: Pick<OidcConfig, "roleMapping" | "defaultRole">,
  existing: { role_from_claim: boolean } | undefined,
): OidcRole | undefined {
  const mapped = mappedRole(groups, oidc.roleMapping);
  if (mapped) return mapped;
  return existing?.role_from_claim ? oidc.defaultRole : undefined;
}
