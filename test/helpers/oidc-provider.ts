import http from "node:http";
import type { AddressInfo } from "node:net";
import Provider from "oidc-provider";

// A real OpenID provider for the sign-in tests: oidc-provider on loopback
// over plain http, with its development interactions (a login form that
// takes any login name and password, then a consent page with a Continue
// button). It listens before it is configured, so that a test can start
// Waypost with its issuer and then register Waypost's redirect URI.

/** A person the provider signs in: the login name typed into its form is `sub`. */
export interface TestAccount {
  sub: string;
  email: string;
  /** Absent: the claim is not sent at all. */
  email_verified?: boolean;
  name?: string;
  groups?: string[];
}

export interface TestClient {
  clientId: string;
  clientSecret: string;
  redirectUris: string[];
}

/**
 * How the provider's ID tokens are made, changeable between sign-ins: the
 * one deliberate misbehaviour the tests need is a token Waypost must
 * refuse, signed by the provider's own keys.
 */
export interface IdTokenSettings {
  /** Lifetime in seconds; zero or less issues tokens already expired by that much. */
  ttlSeconds: number;
  /** Issue the ID token to this other registered client (a wrong audience for Waypost). */
  audienceClientId?: string | undefined;
}

export interface TestOidcProvider {
  /** http://127.0.0.1:PORT: WAYPOST_OIDC_ISSUER. */
  issuer: string;
  /** The accounts by login name; a test may change them between sign-ins. */
  accounts: Map<string, TestAccount>;
  idToken: IdTokenSettings;
  /** Creates the provider with its clients; requests before this are answered 503. */
  configure(options: { clients: TestClient[]; conformIdTokenClaims?: boolean }): void;
  close(): Promise<void>;
}

export async function startOidcProvider(accounts: TestAccount[] = []): Promise<TestOidcProvider> {
  let handler: ((req: http.IncomingMessage, res: http.ServerResponse) => void) | undefined;
  const server = http.createServer((req, res) => {
    if (handler) return handler(req, res);
    res.writeHead(503).end("the test provider is not configured yet");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const stand: TestOidcProvider = {
    issuer,
    accounts: new Map(accounts.map((account) => [account.sub, account])),
    idToken: { ttlSeconds: 600 },
    configure({ clients, conformIdTokenClaims = true }) {
      if (handler) throw new Error("the test provider is configured already");
      const provider = createProvider(stand, clients, conformIdTokenClaims);
      handler = provider.callback();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return stand;
}

function createProvider(stand: TestOidcProvider, clients: TestClient[], conformIdTokenClaims: boolean): Provider {
  const provider = new Provider(stand.issuer, {
    clients: clients.map((client) => ({
      client_id: client.clientId,
      client_secret: client.clientSecret,
      redirect_uris: client.redirectUris,
      grant_types: ["authorization_code"],
      response_types: ["code"],
      token_endpoint_auth_method: "client_secret_basic",
    })),
    async findAccount(_ctx: unknown, id: string) {
      const account = stand.accounts.get(id);
      if (!account) return undefined;
      return {
        accountId: id,
        async claims() {
          return {
            sub: account.sub,
            email: account.email,
            ...(account.email_verified === undefined ? {} : { email_verified: account.email_verified }),
            name: account.name ?? account.sub,
            groups: account.groups ?? [],
          };
        },
      };
    },
    // A scope of its own for the groups claim, as Keycloak and Okta have.
    claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name"], groups: ["groups"] },
    scopes: ["openid", "email", "profile", "groups"],
    // true: the scopes' claims are in userinfo only, so Waypost's userinfo path runs; false: in the ID token too.
    conformIdTokenClaims,
    features: { devInteractions: { enabled: true } },
    pkce: { required: () => true },
    cookies: { keys: ["waypost-test-provider-cookie-key"] },
    ttl: {
      AccessToken: 600,
      AuthorizationCode: 600,
      Grant: 3600,
      Interaction: 3600,
      Session: 3600,
      IdToken: () => Math.max(1, stand.idToken.ttlSeconds),
    },
  });
  // The provider's own ID-token issuing, with the settings' misbehaviour:
  // an expiry in the past (its ttl must be positive, but an explicit
  // `expiresAt` may lie behind now), or another client as the audience.
  const issue = provider.IdToken.prototype.issue;
  provider.IdToken.prototype.issue = async function (options) {
    if (options?.use !== "idtoken") return issue.call(this, options);
    const { ttlSeconds, audienceClientId } = stand.idToken;
    if (audienceClientId) this.client = await provider.Client.find(audienceClientId);
    const expiresAt = ttlSeconds <= 0 ? Math.floor(Date.now() / 1000) + ttlSeconds - 1 : options.expiresAt;
    return issue.call(this, { ...options, expiresAt });
  };
  return provider;
}
