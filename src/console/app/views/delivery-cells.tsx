import type { Delivery } from "../../../../gen/waypost/v1/delivery_pb.js";
import { statusLabels } from "../format.js";
import { DestinationLink, type Names } from "../names.js";

/** The cells every list of deliveries has: destination, type, message ID, user, status and attempts. */
export function DeliveryCells(props: { delivery: Delivery; names: Names | undefined }) {
  const d = props.delivery;
  return (
    <>
      <td>
        <DestinationLink id={d.destinationId} names={props.names} />
      </td>
      <td>{d.type}</td>
      <td>
        <code>{d.messageId}</code>
      </td>
      <td>{d.userId || d.anonymousId}</td>
      <td class={`status-${statusLabels[d.status]}`}>{statusLabels[d.status]}</td>
      <td class="num">{d.attemptCount}</td>
    </>
  );
}
