import * as client from "openid-client";
import type { OidcConfig } from "../access-config.js";
import { ConfigError } from "../config-values.js";
import type { Logger } from "../logger.js";

// The one file that speaks to the identity provider, through openid-client:
// discovery, the authorization URL, and the code exchange, whose checks
// (issuer, audience, expiry, nonce, signature, state, PKCE) are
// openid-client's. Nothing here logs a code, a token or the client secret.

/** What the callback learned: the ID token's claims, completed from userinfo when asked. */
export interface ExchangedClaims {
  issuer: string;
  claims: Record<string, unknown>;
}

export interface AuthorizationRequest {
  redirectUri: string;
  state: string;
  nonce: string;
  codeVerifier: string;
}

export interface CodeExchange {
  /** The callback's URL as the provider sent the browser to it: the redirect URI and the provider's query. */
  callbackUrl: URL;
  state: string;
  nonce: string;
  codeVerifier: string;
  /** Claims the ID token must hold; when one is missing, userinfo is asked. */
  wantedClaims: readonly string[];
}

export interface OidcClient {
  authorizationUrl(request: AuthorizationRequest): Promise<URL>;
  exchange(exchange: CodeExchange): Promise<ExchangedClaims>;
}

/** The provider could not be reached, or its discovery document was refused: try again later. */
export class ProviderUnavailable extends Error {
  override name = "ProviderUnavailable";
}

/** The provider's answer to the callback was refused, or it refused the sign-in itself. */
export class ProviderAnswerRefused extends Error {
  override name = "ProviderAnswerRefused";
  /** True when the provider itself answered with an error (the person cancelled, or is not assigned the app). */
  readonly byProvider: boolean;
  constructor(message: string, byProvider: boolean) {
    super(message);
    this.byProvider = byProvider;
  }
}

export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  return host === "localhost" || host === "::1" || /^127(\.\d{1,3}){3}$/.test(host);
}

/**
 * An OpenID Connect client of `oidc.issuer`. Discovery happens on first use,
 * not at start: a provider that is down when Waypost starts must not stop
 * Waypost (the admin token and API tokens work without it). A failed
 * discovery is not kept, so the next sign-in tries again; a good one is.
 *
 * Plain http is allowed only for an issuer on loopback (a provider run
 * beside Waypost, as the tests do): over a network, http would let anyone
 * on the path swap the provider's keys and sign tokens of their own.
 */
export function createOidcClient(oidc: OidcConfig, logger: Pick<Logger, "warn">): OidcClient {
  const issuer = new URL(oidc.issuer);
  const insecure = issuer.protocol === "http:";
  if (insecure && !isLoopbackHost(issuer.hostname)) {
    throw new ConfigError(`WAYPOST_OIDC_ISSUER must be an https URL (plain http only for a provider on loopback), got ${oidc.issuer}`);
  }
  let configuration: Promise<client.Configuration> | undefined;

  function discover(): Promise<client.Configuration> {
    configuration ??= client
      // client_secret_basic: the method OpenID Connect assumes when a client registered none, which every provider takes.
      .discovery(issuer, oidc.clientId, undefined, oidc.clientSecret ? client.ClientSecretBasic(oidc.clientSecret) : client.None(), {
        ...(insecure ? { execute: [client.allowInsecureRequests] } : {}),
        timeout: 10,
      })
      .catch((error: unknown) => {
        configuration = undefined;
        const reason = describe(error);
        logger.warn({ issuer: oidc.issuer, reason }, "the identity provider's discovery failed");
        throw new ProviderUnavailable(`the identity provider at ${oidc.issuer} could not be reached: ${reason}`);
      });
    return configuration;
  }

  return {
    async authorizationUrl(request) {
      const config = await discover();
      return client.buildAuthorizationUrl(config, {
        redirect_uri: request.redirectUri,
        scope: oidc.scopes,
        response_type: "code",
        code_challenge: await client.calculatePKCECodeChallenge(request.codeVerifier),
        code_challenge_method: "S256",
        state: request.state,
        nonce: request.nonce,
      });
    },

    async exchange(exchange) {
      const config = await discover();
      let tokens: Awaited<ReturnType<typeof client.authorizationCodeGrant>>;
      try {
        tokens = await client.authorizationCodeGrant(config, exchange.callbackUrl, {
          expectedState: exchange.state,
          expectedNonce: exchange.nonce,
          pkceCodeVerifier: exchange.codeVerifier,
          idTokenExpected: true,
        });
      } catch (error) {
        throw refusal(error);
      }
      const idClaims: Record<string, unknown> = { ...tokens.claims() };
      const missing = exchange.wantedClaims.filter((claim) => idClaims[claim] === undefined);
      if (missing.length === 0 || !config.serverMetadata().userinfo_endpoint) return { issuer: String(idClaims.iss), claims: idClaims };
      let userinfo: Record<string, unknown>;
      try {
        userinfo = { ...(await client.fetchUserInfo(config, tokens.access_token, String(idClaims.sub))) };
      } catch (error) {
        throw refusal(error);
      }
      // The ID token's claims win: userinfo only fills what it lacks.
      return { issuer: String(idClaims.iss), claims: { ...userinfo, ...idClaims } };
    },
  };
}

/** An openid-client failure as a refusal whose message is safe to show: its own words, never a token. */
function refusal(error: unknown): Error {
  if (error instanceof ProviderUnavailable) return error;
  if (error instanceof client.AuthorizationResponseError) {
    const description = error.error_description ? ` (${error.error_description})` : "";
    return new ProviderAnswerRefused(`the identity provider refused the sign-in: ${error.error}${description}`.slice(0, 300), true);
  }
  if (error instanceof client.ResponseBodyError) {
    const description = error.error_description ? ` (${error.error_description})` : "";
    return new ProviderAnswerRefused(`the identity provider refused the code: ${error.error}${description}`.slice(0, 300), true);
  }
  if (error instanceof Error && isNetworkFailure(error)) {
    return new ProviderUnavailable(`the identity provider could not be reached: ${describe(error)}`);
  }
  return new ProviderAnswerRefused(`the identity provider's answer was refused: ${describe(specific(error))}`, false);
}

/**
 * openid-client words a failed check in general terms ("unexpected JWT
 * claim value encountered"); its cause, oauth4webapi's, names the claim
 * ('unexpected JWT "aud" (audience) claim value'). Those checks' messages
 * are fixed text, never a value of the token, so the cause is shown.
 */
const checkCodes = new Set([
  "OAUTH_JWT_CLAIM_COMPARISON_FAILED",
  "OAUTH_JWT_TIMESTAMP_CHECK_FAILED",
  "OAUTH_JSON_ATTRIBUTE_COMPARISON_FAILED",
  "OAUTH_INVALID_RESPONSE",
]);
function specific(error: unknown): unknown {
  if (error instanceof client.ClientError && error.code && checkCodes.has(error.code) && error.cause instanceof Error) return error.cause;
  return error;
}

/** fetch's own failures (refused, reset, timed out), as openid-client passes them on. */
function isNetworkFailure(error: Error): boolean {
  const cause = (error as { cause?: unknown }).cause;
  return error.message === "fetch failed" || error.name === "TimeoutError" || (cause instanceof Error && cause.name === "TimeoutError");
}

function describe(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/\s+/g, " ").slice(0, 200);
}
