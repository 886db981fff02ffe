import { importsOf, type SourceFile } from "./layer-rules.js";

// File-level import cycles: two files that import each other, directly or
// through others. A cycle makes the order in which modules initialise depend
// on which file is loaded first, and usually means a shared type lives in a
// file that also uses it. Type-only imports count too: they do not run, but
// they tie the files together all the same, and the cure (a file of the
// shared types that both sides import) is as cheap for them.

/** The files of `files` that `file` imports: importsOf's "x.ts", or x.tsx in the console app. */
function importedFiles(file: SourceFile, known: ReadonlySet<string>): string[] {
  return importsOf(file).flatMap((target) => {
    const found = [target, target.replace(/\.ts$/, ".tsx")].find((candidate) => known.has(candidate));
    return found ? [found] : [];
  });
}

/** The import graph of `files`: each path to the paths it imports, in order. */
export function importGraph(files: readonly SourceFile[]): Map<string, string[]> {
  const known = new Set(files.map((file) => file.path));
  return new Map(files.map((file) => [file.path, [...new Set(importedFiles(file, known))]]));
}

/**
 * Each group of files that reach each other through imports (the strongly
 * connected components of more than one file, or a file importing itself),
 * as one line: the shortest cycle through the group's first file, then how
 * many files the group holds.
 */
export function importCycles(files: readonly SourceFile[]): string[] {
  const graph = importGraph(files);
  return stronglyConnected(graph)
    .filter((group) => group.length > 1 || graph.get(group[0]!)!.includes(group[0]!))
    .map((group) => group.sort())
    .sort((a, b) => a[0]!.localeCompare(b[0]!))
    .map((group) => {
      const cycle = shortestCycle(graph, group[0]!, new Set(group));
      const rest = group.length > cycle.length - 1 ? ` (${group.length} files reach each other)` : "";
      return `${cycle.join(" → ")}${rest}`;
    });
}

/** Tarjan's algorithm, iterative so that a deep import chain cannot overflow the stack. */
function stronglyConnected(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const groups: string[][] = [];
  for (const root of graph.keys()) {
    if (index.has(root)) continue;
    const work: Array<{ node: string; next: number }> = [{ node: root, next: 0 }];
    index.set(root, index.size);
    low.set(root, index.get(root)!);
    stack.push(root);
    onStack.add(root);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const targets = graph.get(frame.node)!;
      if (frame.next < targets.length) {
        const target = targets[frame.next++]!;
        if (!index.has(target)) {
          index.set(target, index.size);
          low.set(target, index.get(target)!);
          stack.push(target);
          onStack.add(target);
          work.push({ node: target, next: 0 });
        } else if (onStack.has(target)) {
          low.set(frame.node, Math.min(low.get(frame.node)!, index.get(target)!));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!));
      if (low.get(frame.node) !== index.get(frame.node)) continue;
      const group: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        group.push(member);
      } while (member !== frame.node);
      groups.push(group);
    }
  }
  return groups;
}

/** The shortest path from `start` back to itself inside `group`, by breadth-first search. */
function shortestCycle(graph: ReadonlyMap<string, readonly string[]>, start: string, group: ReadonlySet<string>): string[] {
  const cameFrom = new Map<string, string>();
  const queue = [start];
  for (let head = 0; head < queue.length; head++) {
    const node = queue[head]!;
    for (const target of graph.get(node)!) {
      if (!group.has(target)) continue;
      if (target === start) return [...pathTo(cameFrom, node, start), start];
      if (cameFrom.has(target)) continue;
      cameFrom.set(target, node);
      queue.push(target);
    }
  }
  throw new Error(`${start} is in a cycle that breadth-first search did not find`);
}

function pathTo(cameFrom: ReadonlyMap<string, string>, node: string, start: string): string[] {
  const steps = [node];
  while (steps[0] !== start) steps.unshift(cameFrom.get(steps[0]!)!);
  return steps;
}
