import { UsageError } from "../errors.js";

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * A reference to a resource that has a name (a destination, a source) as
 * its id: an id as given (without a look-up: the RPC says if it does not
 * exist), else the one resource of that name. Names are not unique, so
 * several of one name is a usage error that lists them: acting on one of
 * them at random (a bulk retry, say) would be worse.
 */
export async function resolveNamedRef<T extends { id: string; name: string }>(
  ref: string,
  flag: string,
  kind: { noun: string; plural: string; list(): Promise<T[]> },
): Promise<string> {
  if (uuid.test(ref)) return ref;
  const named = (await kind.list()).filter((item) => item.name === ref);
  if (named.length === 1) return named[0]!.id;
  if (named.length === 0) {
    throw new UsageError(`${flag}: no ${kind.noun} has the id or name ${JSON.stringify(ref)} (waypost ${kind.plural} list shows them)`);
  }
  const matches = named.map((item) => `  ${item.id}  ${item.name}`).join("\n");
  throw new UsageError(`${flag}: ${named.length} ${kind.plural} are named ${JSON.stringify(ref)}; give one's id:\n${matches}`);
}
