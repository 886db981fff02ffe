import { Fragment } from "preact";

/**
 * Where a kind's calls go, in the destinations list: its address, then what
 * it names there (`postgres://… (schema analytics)`). Empty when the
 * destination has no settings of the kind.
 */
export function Target(props: { address: string | undefined; parts: ReadonlyArray<readonly [string, string]> }) {
  if (props.address === undefined) return <div />;
  return (
    <div>
      <code>{props.address}</code> (
      {props.parts.map(([word, value], i) => (
        <Fragment key={word}>
          {i > 0 && ", "}
          {word} <code>{value}</code>
        </Fragment>
      ))}
      )
    </div>
  );
}

/** What the broker kinds (AMQP, NATS) say where the others speak of requests. */
export const brokerWording = {
  retry: { now: "Publishes it", again: "Publishes it again now" },
  requestHeaders: false,
  discards: false,
} as const;

/** The hint under a broker's routing key or subject. */
export const templateHint = "A template: {type}, {event}, {sourceId}, {destinationId}.";
