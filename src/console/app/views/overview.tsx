export function OverviewView() { return <section><h1>TODO</h1></section>; }
