/** The most items the CLI asks a List RPC for at once. */
const mostPerPage = 500;

/**
 * The items of a List RPC, page by page up to `limit` (all of them without
 * one), and the token of the page after them ("" when there is none).
 * `page` asks for the page of a token ("" is the first) holding at most
 * `room` items.
 */
export async function listPages<R extends { nextPageToken: string }, T>(
  page: (pageToken: string, room: number) => Promise<R>,
  items: (response: R) => T[],
  limit = Number.POSITIVE_INFINITY,
): Promise<{ items: T[]; nextPageToken: string }> {
  const all: T[] = [];
  let pageToken = "";
  do {
    const response = await page(pageToken, Math.min(mostPerPage, limit - all.length));
    all.push(...items(response));
    pageToken = response.nextPageToken;
  } while (pageToken && all.length < limit);
  return { items: all, nextPageToken: pageToken };
}
