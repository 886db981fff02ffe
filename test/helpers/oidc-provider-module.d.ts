// oidc-provider (the tests' real OpenID provider, test/helpers/oidc-provider.ts) ships no types: what the tests use of it.
declare module "oidc-provider" {
  import type { IncomingMessage, ServerResponse } from "node:http";

  interface IdTokenIssueOptions {
    use?: string;
    expiresAt?: number | null;
  }

  interface IdTokenInstance {
    client: unknown;
  }

  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    issuer: string;
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    on(event: string, listener: (...args: unknown[]) => void): this;
    readonly IdToken: { prototype: IdTokenInstance & { issue(this: IdTokenInstance, options?: IdTokenIssueOptions): Promise<string> } };
    readonly Client: { find(id: string): Promise<unknown> };
  }
}
