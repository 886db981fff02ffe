import { Code, ConnectError } from "@connectrpc/connect";
import { expect, test } from "vitest";
import { createDomainErrorInterceptor, toConnectError } from "../../src/api/domain-errors.js";
import { InvalidInputError, NotFoundError } from "../../src/errors.js";

test("domain errors become Connect codes with the same message, keeping the original as cause", () => {
  const invalid = new InvalidInputError("members[2].userId", "is empty");
  const mapped = toConnectError(invalid) as ConnectError;
  expect(mapped).toBeInstanceOf(ConnectError);
  expect(mapped.code).toBe(Code.InvalidArgument);
  expect(mapped.rawMessage).toBe("members[2].userId: is empty");
  expect(mapped.cause).toBe(invalid);
  const missing = toConnectError(new NotFoundError("audience", "a1")) as ConnectError;
  expect(missing.code).toBe(Code.NotFound);
  expect(missing.rawMessage).toBe('audience "a1" not found');
  const other = new Error("boom");
  expect(toConnectError(other)).toBe(other);
});

test("the interceptor maps errors thrown by a handler and by a streaming response while it is read", async () => {
  const intercept = createDomainErrorInterceptor();
  const unary = intercept(async () => {
    throw new InvalidInputError("audienceId", "is required");
  });
  await expect(unary({} as never)).rejects.toMatchObject({ code: Code.InvalidArgument });

  const streaming = intercept(
    async () =>
      ({
        stream: true,
        message: (async function* () {
          yield 1;
          throw new NotFoundError("audience", "x");
        })(),
      }) as never,
  );
  const response = (await streaming({} as never)) as unknown as { message: AsyncIterable<number> };
  const read: number[] = [];
  await expect(
    (async () => {
      for await (const value of response.message) read.push(value);
    })(),
  ).rejects.toMatchObject({ code: Code.NotFound });
  expect(read).toEqual([1]);
});
