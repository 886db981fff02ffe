export function LiveView() { return <section><h1>TODO</h1></section>; }
