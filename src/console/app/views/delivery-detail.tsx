export function DeliveryDetailView() { return <section><h1>TODO</h1></section>; }
