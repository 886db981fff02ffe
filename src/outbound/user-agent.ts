/** The User-Agent of every request Waypost sends: webhooks and operator events. */
export const userAgent = "Waypost/1.0";
