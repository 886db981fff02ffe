// A browser without a browser, for the sign-in tests that need no page
// rendered: fetch with a cookie jar per host, following redirects by hand
// so every hop (and its Set-Cookie) can be looked at, and able to fill in
// the test provider's development login and consent forms.

export interface Hop {
  url: string;
  status: number;
  headers: Headers;
  /** The body of the last hop only (redirects have none worth reading). */
  body: string;
}

export class FetchBrowser {
  /** host → cookie name → value. */
  readonly jar = new Map<string, Map<string, string>>();
  userAgent = "waypost-test-browser/1.0";

  cookiesFor(url: string): Map<string, string> {
    const host = new URL(url).host;
    let cookies = this.jar.get(host);
    if (!cookies) this.jar.set(host, (cookies = new Map()));
    return cookies;
  }

  /** One request, cookies sent and kept; no redirect followed. */
  async request(url: string, init: RequestInit = {}): Promise<Response> {
    const cookies = this.cookiesFor(url);
    const headers = new Headers(init.headers);
    headers.set("user-agent", this.userAgent);
    if (cookies.size > 0) headers.set("cookie", [...cookies].map(([name, value]) => `${name}=${value}`).join("; "));
    const response = await fetch(url, { ...init, headers, redirect: "manual" });
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(";");
      const at = pair!.indexOf("=");
      const name = pair!.slice(0, at).trim();
      const value = pair!.slice(at + 1).trim();
      const expired = attributes.some(
        (attribute) => /^\s*max-age=0\s*$/i.test(attribute) || /^\s*expires=Thu, 01 Jan 1970/i.test(attribute),
      );
      if (expired || value === "") cookies.delete(name);
      else cookies.set(name, value);
    }
    return response;
  }

  /** Follows redirects from `url` until an answer that is not one (or `until` says stop); every hop, the last with its body. */
  async follow(url: string, init: RequestInit = {}, until: (hop: Hop) => boolean = () => false): Promise<Hop[]> {
    const hops: Hop[] = [];
    let next: { url: string; init: RequestInit } | undefined = { url, init };
    while (next) {
      if (hops.length > 20) throw new Error(`more than 20 redirects from ${url}`);
      const response = await this.request(next.url, next.init);
      const location = response.headers.get("location");
      const redirected = response.status >= 300 && response.status < 400 && location !== null;
      const hop: Hop = { url: next.url, status: response.status, headers: response.headers, body: redirected ? "" : await response.text() };
      if (redirected) await response.body?.cancel();
      hops.push(hop);
      if (!redirected || until(hop)) break;
      next = { url: new URL(location!, next.url).href, init: {} };
    }
    return hops;
  }

  /**
   * From a page of the provider's development interactions (the last hop),
   * submits its form (login with `login` as the login name, or consent), and
   * follows on; repeats while the provider asks, so it ends at the first
   * answer from elsewhere (Waypost's callback and where it leads).
   */
  async completeProviderInteractions(hops: Hop[], login: string, issuer: string, until?: (hop: Hop) => boolean): Promise<Hop[]> {
    let all = hops;
    for (let round = 0; round < 4; round++) {
      const last = all[all.length - 1]!;
      if (!last.url.startsWith(issuer) || last.status !== 200) return all;
      const action = /<form[^>]*action="([^"]+)"/.exec(last.body)?.[1]?.replaceAll("&amp;", "&");
      const prompt = /name="prompt" value="(\w+)"/.exec(last.body)?.[1];
      if (!action || !prompt) throw new Error(`no interaction form on ${last.url}: ${last.body.slice(0, 300)}`);
      const form = new URLSearchParams(prompt === "login" ? { prompt, login, password: "any" } : { prompt });
      const next = await this.follow(
        new URL(action, last.url).href,
        { method: "POST", body: form, headers: { "content-type": "application/x-www-form-urlencoded" } },
        until,
      );
      all = [...all, ...next];
      if (until && next.some(until)) return all;
    }
    return all;
  }
}
