export function DeliveriesView() { return <section><h1>TODO</h1></section>; }
