/** One entry of the catalog as the committed index (catalog-index.json) describes it. */
export interface CatalogIndexRow {
  /** Its folder in the catalog: "mixpanel". */
  slug: string;
  name: string;
  description: string;
  actionCount: number;
  /** Of its actions, how many have a batch form (performBatch). */
  batchActionCount: number;
  /** Its authentication scheme: "custom", "basic", "oauth2", "oauth-managed"; "" for none. */
  scheme: string;
  offered: boolean;
  /** Why Waypost does not offer it; "" when it does. */
  reason: string;
}
