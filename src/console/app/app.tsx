import { LocationProvider, Route, Router } from "preact-iso";
import { SessionContext } from "./context.js";
import { Layout } from "./layout.js";
import { useSignIn } from "./sign-in-state.js";
import { AuditLogView } from "./views/audit-log.js";
import { AudiencesView } from "./views/audiences.js";
import { DeletionsView } from "./views/deletions.js";
import { DeliveriesView } from "./views/deliveries.js";
import { DeliveryDetailView } from "./views/delivery-detail.js";
import { DestinationEditView } from "./views/destination-edit.js";
import { DestinationsView } from "./views/destinations.js";
import { FilteredCallsView } from "./views/filtered-calls.js";
import { LiveView } from "./views/live.js";
import { MessageView } from "./views/message.js";
import { NotFoundView } from "./views/not-found.js";
import { OverviewView } from "./views/overview.js";
import { ProfileView } from "./views/profile.js";
import { ProfilesView } from "./views/profiles.js";
import { SignInView } from "./views/sign-in.js";
import { SourceDetailView } from "./views/source-detail.js";
import { SourcesView } from "./views/sources.js";
import { TokensView } from "./views/tokens.js";
import { TrackingPlansView, TrackingPlanView } from "./views/tracking-plans.js";
import { UsersView } from "./views/users.js";

/** The console: the sign-in page until a credential is accepted, then the views its principal may see. */
export function App() {
  const { state, signInWithToken } = useSignIn();
  if (state.phase === "checking") {
    return (
      <main class="sign-in">
        <p role="status">Checking sign-in…</p>
      </main>
    );
  }
  if (state.phase === "signed-out") return <SignInView notice={state.notice} oidc={state.oidc} onToken={signInWithToken} />;
  const session = state.session;
  return (
    <SessionContext.Provider value={session}>
      <LocationProvider scope="/console">
        <Layout>
          <Router>
            <Route path="/console/" component={OverviewView} />
            <Route path="/console/sources" component={SourcesView} />
            <Route path="/console/sources/:id" component={SourceDetailView} />
            <Route path="/console/destinations" component={DestinationsView} />
            <Route path="/console/destinations/:id" component={DestinationEditView} />
            <Route path="/console/destinations/:id/filtered" component={FilteredCallsView} />
            <Route path="/console/deliveries" component={DeliveriesView} />
            <Route path="/console/deliveries/:id" component={DeliveryDetailView} />
            <Route path="/console/live" component={LiveView} />
            <Route path="/console/messages/:id" component={MessageView} />
            <Route path="/console/audiences" component={AudiencesView} />
            <Route path="/console/profiles" component={ProfilesView} />
            <Route path="/console/profiles/:id" component={ProfileView} />
            <Route path="/console/deletions" component={DeletionsView} />
            <Route path="/console/plans" component={TrackingPlansView} />
            <Route path="/console/plans/:id" component={TrackingPlanView} />
            <Route path="/console/tokens" component={TokensView} />
            <Route path="/console/audit" component={AuditLogView} />
            <Route path="/console/users" component={UsersView} />
            <Route default component={NotFoundView} />
          </Router>
        </Layout>
      </LocationProvider>
    </SessionContext.Provider>
  );
}
