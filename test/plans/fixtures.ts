/** A small plan used across the tracking plan tests. */
export const checkoutPlan = {
  name: "Shop",
  allowUnplannedEvents: false,
  events: {
    "Order Completed": {
      description: "A customer paid.",
      properties: {
        type: "object",
        properties: {
          total: { type: "number" },
          currency: { type: "string", enum: ["EUR", "USD"] },
          coupon: { type: "string" },
        },
        required: ["total", "currency"],
      },
    },
    "Signed Up": { properties: { type: "object", properties: { plan: { type: "string" } } } },
  },
  identify: {
    traits: { type: "object", properties: { email: { type: "string", format: "email" }, age: { type: "integer" } } },
  },
};
