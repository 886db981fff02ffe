import { test as base } from "vitest";
import { createPool } from "../../src/db/pool.js";
import { createTestDatabase, type TestDatabase, type TestDatabaseOptions } from "./database.js";
import { type Receiver, type ReceiverOptions, startReceiver } from "./receiver.js";
import { startTestServer, type TestServer, type TestServerOptions } from "./server.js";

/** A server's options, but for its database: the fixture's server runs on the file's. */
export type ServerFixtureOptions = Omit<TestServerOptions, "database">;

/**
 * What a test file's fixtures are started with. Each part is for one
 * fixture; a fixture no test or hook of the file asks for is never started.
 */
export interface FixtureOptions {
  /** The file's database: migrated (default) or empty, and the most connections `pool` opens. */
  database?: TestDatabaseOptions & { max?: number };
  /**
   * The Waypost server's options; it always runs on the file's `database`.
   * A function of the receiver when the config names it (an operator webhook).
   */
  server?: ServerFixtureOptions | ((fixtures: { receiver: Receiver }) => ServerFixtureOptions);
  /** The loopback receiver's TLS and answers. */
  receiver?: ReceiverOptions;
}

/** Receivers a test starts for itself, each closed when the test ends. */
export interface TestReceivers {
  start(options?: ReceiverOptions): Promise<Receiver>;
}

/**
 * Vitest's `test` with fixtures. File-scoped, each started the first time a
 * test or a `test.beforeAll` of the file names it and stopped after the
 * file's last test (after its `afterAll` hooks):
 *
 * - `database`: a copy of the run's migrated template (test/global-setup.ts),
 *   dropped at the end;
 * - `pool`: a pool on `database`;
 * - `server`: a Waypost on loopback over `database`, with admin clients;
 * - `receiver`: a webhook endpoint on loopback that records what it gets.
 *
 * And per test, `receivers.start()`: more receivers, closed after the test
 * (after its `afterEach` hooks, so one can first settle the deliveries to them).
 *
 * Call it once at the top level of a test file: `const test = testWith()`,
 * or `testWith({ server: { config: ... } })`. Each file makes its own: files
 * share a worker's modules (`isolate: false`), and `test.override` at the top
 * level of a file changes the `test` it is called on for every file after it.
 */
export function testWith(options: FixtureOptions = {}) {
  const serverOptions = options.server;
  return (
    base
      // The options as a fixture of their own. Vitest reads a fixture's dependencies from the
      // pattern of its first parameter, which must name something: the database and the
      // receiver, which need nothing else, name this.
      .extend("fixtureOptions", { scope: "file" }, options)
      .extend("database", { scope: "file" }, async ({ fixtureOptions }, { onCleanup }) => {
        const { max: _max, ...databaseOptions } = fixtureOptions.database ?? {};
        const database = await createTestDatabase(databaseOptions);
        onCleanup(() => database.drop());
        return database;
      })
      .extend("pool", { scope: "file" }, async ({ fixtureOptions, database }, { onCleanup }) => {
        const max = fixtureOptions.database?.max;
        // createPool's pool listens for an idle connection's error: the database is dropped
        // WITH (FORCE) after the pool ends, which can reach a connection it is still closing.
        const pool = createPool({ connectionString: database.url, ...(max ? { max } : {}) });
        onCleanup(() => pool.end());
        return pool;
      })
      .extend("receiver", { scope: "file" }, async ({ fixtureOptions }, { onCleanup }) => {
        const receiver = await startReceiver(fixtureOptions.receiver);
        onCleanup(() => receiver.close());
        return receiver;
      })
      // Vitest starts what a fixture's parameter names: the receiver only for a server whose options need it.
      .extend(
        "server",
        { scope: "file" },
        typeof serverOptions === "function"
          ? async ({ database, receiver }, { onCleanup }) => startServer(database, serverOptions({ receiver }), onCleanup)
          : async ({ database }, { onCleanup }) => startServer(database, serverOptions, onCleanup),
      )
      .extend("receivers", async ({ onTestFinished }): Promise<TestReceivers> => {
        const started: Receiver[] = [];
        onTestFinished(async () => {
          await Promise.all(started.splice(0).map((receiver) => receiver.close()));
        });
        return {
          async start(receiverOptions) {
            const receiver = await startReceiver(receiverOptions);
            started.push(receiver);
            return receiver;
          },
        };
      })
  );
}

async function startServer(
  database: TestDatabase,
  options: ServerFixtureOptions | undefined,
  onCleanup: (cleanup: () => Promise<void>) => void,
): Promise<TestServer> {
  const server = await startTestServer({ ...options, database });
  onCleanup(() => server.stop());
  return server;
}
