import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";

/** Where a paged list is: the tokens of the pages walked so far (the first is ""). */
export interface PageTokens {
  /** The token of the page shown now. */
  pageToken: string;
  /** 1 on the first page. */
  number: number;
  back(): void;
  forward(nextPageToken: string): void;
}

/** Page tokens for a List RPC, back at the first page whenever `resetKey` (the filter) changes. */
export function usePageTokens(resetKey: unknown): PageTokens {
  const [tokens, setTokens] = useState<string[]>([""]);
  useEffect(() => setTokens([""]), [resetKey]);
  return {
    pageToken: tokens[tokens.length - 1]!,
    number: tokens.length,
    back: () => setTokens((t) => (t.length > 1 ? t.slice(0, -1) : t)),
    forward: (next) => setTokens((t) => [...t, next]),
  };
}

/** Previous and Next page buttons under a paged table; `children` adds buttons (Refresh) before the page number. */
export function Pager(props: { pages: PageTokens; nextPageToken: string | undefined; children?: ComponentChildren }) {
  const { pages, nextPageToken } = props;
  return (
    <div class="pager">
      <button type="button" class="quiet" disabled={pages.number <= 1} onClick={pages.back}>
        Previous page
      </button>
      <button type="button" class="quiet" disabled={!nextPageToken} onClick={() => nextPageToken && pages.forward(nextPageToken)}>
        Next page
      </button>
      {props.children}
      <span class="hint">Page {pages.number}</span>
    </div>
  );
}
