import { PlanMode, ViolationKind } from "../../../../gen/waypost/v1/tracking_plan_pb.js";
import { EmptyRow, ErrorMessage, HeaderRow } from "../components.js";
import { useLoad } from "../context.js";
import { formatTime } from "../format.js";
import { allSources } from "../paging.js";
import { enumWords } from "../../../enum-words.js";

export const modeLabels = enumWords(PlanMode, { [PlanMode.UNSPECIFIED]: "off" });

const kindLabels = enumWords(ViolationKind, { [ViolationKind.UNSPECIFIED]: "" });

/** Every source with its plan's mode and events, each linking to its plan page. */
export function TrackingPlansView() {
  const loaded = useLoad(async (api) => {
    const sources = await allSources(api);
    return Promise.all(
      sources.map(async (source) => ({ source, plan: (await api.plans.getTrackingPlan({ sourceId: source.id })).trackingPlan })),
    );
  }, []);
  return (
    <section>
      <h1>Tracking plans</h1>
      <p class="hint">Plans are kept in git and set with `waypost plan apply FILE --source ID --mode observe|omit|block`.</p>
      <ErrorMessage error={loaded.error} />
      <table aria-label="Tracking plans">
        <HeaderRow columns={["Source", "Plan", "Mode", "Events"]} />
        <tbody>
          {loaded.data?.length === 0 && <EmptyRow columns={4}>No sources yet.</EmptyRow>}
          {loaded.data?.map(({ source, plan }) => (
            <tr key={source.id}>
              <td>
                <a href={`/console/plans/${source.id}`}>{source.name}</a>
              </td>
              <td>{plan?.plan ? String(plan.plan.name ?? "(unnamed)") : "none"}</td>
              <td>{modeLabels[plan?.mode ?? PlanMode.OFF]}</td>
              <td class="num">{plan?.plan ? Object.keys((plan.plan.events ?? {}) as object).length : 0}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

/** One source's tracking plan: its mode, the plan itself and the violations calls showed, most frequent first. */
export function TrackingPlanView(props: { params: { id: string } }) {
  const sourceId = props.params.id;
  const loaded = useLoad(
    async (api) => {
      const [source, plan, violations] = await Promise.all([
        api.sources.getSource({ id: sourceId }),
        api.plans.getTrackingPlan({ sourceId }),
        api.plans.listViolations({ sourceId, pageSize: 200 }),
      ]);
      return { source: source.source, plan: plan.trackingPlan, violations: violations.violations };
    },
    [sourceId],
  );
  const plan = loaded.data?.plan;
  return (
    <section>
      <h1>Tracking plan{loaded.data?.source ? ` of ${loaded.data.source.name}` : ""}</h1>
      <ErrorMessage error={loaded.error} />
      {plan && (
        <dl class="props" aria-label="Plan">
          <dt>Mode</dt>
          <dd data-testid="plan-mode">{modeLabels[plan.mode]}</dd>
          <dt>Plan</dt>
          <dd>{plan.plan ? String(plan.plan.name ?? "(unnamed)") : "none"}</dd>
          <dt>Updated</dt>
          <dd>{plan.updateTime ? formatTime(plan.updateTime) : "-"}</dd>
        </dl>
      )}
      <h2>Violations</h2>
      <table aria-label="Violations">
        <HeaderRow columns={["Count", "Kind", "Call", "Event", "Path", "Problem", "Example", "First seen", "Last seen"]} />
        <tbody>
          {loaded.data?.violations.length === 0 && <EmptyRow columns={9}>No violations recorded.</EmptyRow>}
          {loaded.data?.violations.map((v) => (
            <tr key={`${v.callType}|${v.event}|${v.path}|${v.kind}`}>
              <td class="num">{v.count.toString()}</td>
              <td>{kindLabels[v.kind]}</td>
              <td>{v.callType}</td>
              <td>{v.event || "-"}</td>
              <td>
                <code>{v.path}</code>
              </td>
              <td>{v.message}</td>
              <td>
                <code>{v.example || "-"}</code>
              </td>
              <td>{formatTime(v.firstSeen)}</td>
              <td>{formatTime(v.lastSeen)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {plan?.plan && (
        <>
          <h2>Plan</h2>
          <pre class="body" data-testid="plan-document">
            {plan.planJson || JSON.stringify(plan.plan, null, 2)}
          </pre>
        </>
      )}
    </section>
  );
}
