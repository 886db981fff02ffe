// The admin token lives in sessionStorage: it survives a reload of the tab,
// disappears with the tab, and is never put in a URL or written to a log.
const key = "waypost.adminToken";

export function readToken(): string | null {
  return sessionStorage.getItem(key);
}

export function saveToken(token: string): void {
  sessionStorage.setItem(key, token);
}

export function forgetToken(): void {
  sessionStorage.removeItem(key);
}
