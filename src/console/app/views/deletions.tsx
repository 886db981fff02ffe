export function DeletionsView() { return <section><h1>TODO</h1></section>; }
