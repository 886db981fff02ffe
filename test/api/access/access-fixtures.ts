import type { TestServer } from "../../helpers/server.js";

export interface RpcAnswer {
  status: number;
  code: string | undefined;
  message: string;
  body: Record<string, unknown>;
}

/** One admin RPC in Connect's JSON form over HTTP, with the Authorization header given (or none). */
export async function callRpc(
  server: TestServer,
  rpc: string,
  body: unknown,
  headers: Record<string, string> = { authorization: `Bearer ${server.adminToken}` },
): Promise<RpcAnswer> {
  const response = await fetch(`${server.url}/waypost.v1.${rpc}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  let parsed: Record<string, unknown> = {};
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // A streaming RPC answers a unary JSON request with no JSON body: the gate let it through.
  }
  return {
    status: response.status,
    code: typeof parsed.code === "string" ? parsed.code : undefined,
    message: typeof parsed.message === "string" ? parsed.message : "",
    body: parsed,
  };
}

/** Like callRpc, but the answer must be a success: its body. */
export async function okRpc(server: TestServer, rpc: string, body: unknown, headers?: Record<string, string>) {
  const answer = await callRpc(server, rpc, body, headers);
  if (answer.status !== 200) throw new Error(`${rpc} failed: ${answer.status} ${answer.code} ${answer.message}`);
  return answer.body;
}

export interface TokenGrant {
  name?: string;
  role?: "ROLE_VIEWER" | "ROLE_EDITOR" | "ROLE_ADMIN" | "ROLE_OWNER";
  scopes?: string[];
  sourceIds?: string[];
  expireTime?: string;
}

/** A service-account token made with the admin token: its secret and id. */
export async function createToken(
  server: TestServer,
  grant: TokenGrant,
): Promise<{ id: string; secret: string; bearer: Record<string, string> }> {
  const body = await okRpc(server, "TokenService/CreateToken", {
    token: { name: grant.name ?? "test token", serviceAccount: true, ...grant },
  });
  const secret = body.secret as string;
  return { id: (body.token as { id: string }).id, secret, bearer: { authorization: `Bearer ${secret}` } };
}
