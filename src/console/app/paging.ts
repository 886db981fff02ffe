import type { Api } from "./api.js";

/** Pages through a List RPC (bounded: at most `maxPages` pages). */
export async function listAll<R extends { nextPageToken: string }, T>(
  page: (pageToken: string) => Promise<R>,
  items: (response: R) => T[],
  maxPages = 20,
): Promise<T[]> {
  const all: T[] = [];
  let token = "";
  for (let i = 0; i < maxPages; i++) {
    const response = await page(token);
    all.push(...items(response));
    token = response.nextPageToken;
    if (!token) break;
  }
  return all;
}

/** Every source, for menus and names. */
export const allSources = (api: Api) =>
  listAll(
    (pageToken) => api.sources.listSources({ pageToken, pageSize: 100 }),
    (r) => r.sources,
  );

/** Every destination, for lists and names. */
export const allDestinations = (api: Api) =>
  listAll(
    (pageToken) => api.destinations.listDestinations({ pageToken, pageSize: 100 }),
    (r) => r.destinations,
  );
