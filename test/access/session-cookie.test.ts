import { describe, expect, test } from "vitest";
import { clearSessionCookie, parseCookies, serializeSessionCookie, sessionIdFromCookie } from "../../src/access/session-cookie.js";

const id = "A".repeat(43);

describe("parseCookies", () => {
  test("pairs separated by semicolons, trimmed, quoted and percent-encoded values, first of a name wins", () => {
    expect(parseCookies('a=1; b="two"; c=x%20y;d=4; a=5')).toEqual(
      new Map([
        ["a", "1"],
        ["b", "two"],
        ["c", "x y"],
        ["d", "4"],
      ]),
    );
  });

  test("garbage is skipped, never thrown", () => {
    expect(parseCookies(undefined)).toEqual(new Map());
    expect(parseCookies("")).toEqual(new Map());
    expect(parseCookies(";;;=x; novalue; =; bad=%E0%A4%A; ok=1")).toEqual(new Map([["ok", "1"]]));
  });

  test("a huge header is cut: only its first few KB are read", () => {
    const header = `${"x=1; ".repeat(200_000)}waypost_session=${id}`;
    const cookies = parseCookies(header);
    expect(cookies.size).toBeLessThanOrEqual(100);
    expect(cookies.has("waypost_session")).toBe(false);
  });
});

describe("sessionIdFromCookie", () => {
  test("the session cookie's value when it has a session id's shape", () => {
    expect(sessionIdFromCookie(`theme=dark; waypost_session=${id}`)).toBe(id);
    expect(sessionIdFromCookie(`waypost_session=${id}-_x`)).toBe(`${id}-_x`);
  });

  test("else undefined", () => {
    for (const header of [
      undefined,
      "",
      "waypost_session=",
      "waypost_session=short",
      `waypost_session=${id}!`,
      `waypost_session=${"A".repeat(200)}`,
      `xwaypost_session=${id}`,
    ]) {
      expect(sessionIdFromCookie(header), String(header)).toBeUndefined();
    }
  });
});

test("serialize: HttpOnly, SameSite=Lax, Path=/, Secure when asked; clearing expires it", () => {
  expect(serializeSessionCookie(id, { secure: true, maxAgeSeconds: 3600 })).toBe(
    `waypost_session=${id}; Path=/; Max-Age=3600; HttpOnly; SameSite=Lax; Secure`,
  );
  expect(serializeSessionCookie(id, { secure: false, maxAgeSeconds: 1.5 })).toBe(
    `waypost_session=${id}; Path=/; Max-Age=1; HttpOnly; SameSite=Lax`,
  );
  expect(clearSessionCookie({ secure: true })).toBe("waypost_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax; Secure");
});
