import { expect, test } from "vitest";
import { listPage } from "../../src/api/paging.js";

// listPage against an in-memory listing: what each page holds and when it offers another.

const listing = ["a", "b", "c", "d", "e"];

/** The listing from after `cursor`, as a keyset query reads it, noting each limit asked for. */
function reader(after: string | undefined, limits: number[]) {
  return async (limit: number) => {
    limits.push(limit);
    return listing.slice(after === undefined ? 0 : listing.indexOf(after) + 1).slice(0, limit);
  };
}

async function allPages(size: number, fits?: (rows: readonly string[]) => number): Promise<string[][]> {
  const pages: string[][] = [];
  let token: string | undefined;
  const limits: number[] = [];
  do {
    const page = await listPage(size, reader(token, limits), (last) => last, fits);
    pages.push(page.rows);
    token = page.nextPageToken === "" ? undefined : page.nextPageToken;
  } while (token !== undefined);
  expect(limits.every((limit) => limit === size + 1)).toBe(true);
  return pages;
}

test("pages of the size asked for, and no token after the last", async () => {
  expect(await allPages(2)).toEqual([["a", "b"], ["c", "d"], ["e"]]);
});

test("a full last page offers no empty page after it", async () => {
  expect(await allPages(5)).toEqual([["a", "b", "c", "d", "e"]]);
  expect(await allPages(10)).toEqual([["a", "b", "c", "d", "e"]]);
});

test("a budget cuts a page short, and the next page starts after the cut", async () => {
  expect(await allPages(3, () => 1)).toEqual([["a"], ["b"], ["c"], ["d"], ["e"]]);
  expect(await allPages(2, () => 10)).toEqual([["a", "b"], ["c", "d"], ["e"]]);
});

test("a budget that fits nothing gives an empty page and no token", async () => {
  const page = await listPage(
    2,
    async () => ["a", "b", "c"],
    (last) => last,
    () => 0,
  );
  expect(page).toEqual({ rows: [], nextPageToken: "" });
});
