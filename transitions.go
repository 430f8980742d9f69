package sbx

// The sandbox state machine as one table: for each action, the states it may
// start from, the intent written while the provider works, the state it
// leaves the sandbox in and the timeline steps it records. Package lifecycle
// looks every check, intent, resulting state and step name up here; it adds
// only what a table cannot say (funding, admission, the provider call and
// the fields a step settles besides the state).

// Action is something that changes a sandbox's state or expiry.
type Action string

// The actions. Create makes the row; the others act on an existing one.
const (
	ActionCreate     Action = "create"      // the row is written starting while the provider makes the compute
	ActionPause      Action = "pause"       // suspend in memory
	ActionHibernate  Action = "hibernate"   // checkpoint to disk and release memory; the sandbox is (or stays) paused
	ActionResume     Action = "resume"      // continue a paused (or hibernated) sandbox
	ActionDelete     Action = "delete"      // destroy the compute; the row stays, killed
	ActionConnect    Action = "connect"     // make usable: resume a paused sandbox, extend a running one
	ActionRefresh    Action = "refresh"     // extend a running sandbox's expiry; never shortens
	ActionSetTimeout Action = "set_timeout" // replace the timeout: from now when running, from the next resume when paused
	ActionSetEgress  Action = "set_egress"  // replace the egress policy, at once (running) or before the next resume (paused)
	ActionSnapshot   Action = "snapshot"    // capture it as a snapshot (a fork's too); it goes on as it was
	ActionFail       Action = "fail"        // the provider reports the compute ended on its own
)

// Actions lists every action, in the table's order.
var Actions = []Action{ActionCreate, ActionPause, ActionHibernate, ActionResume, ActionDelete,
	ActionConnect, ActionRefresh, ActionSetTimeout, ActionSetEgress, ActionSnapshot, ActionFail}

// Transition is one allowed cell of the table: Action on a sandbox in state From.
type Transition struct {
	Action Action
	From   State
	// Via, when set, is the action this one is carried out as from From (a
	// paused sandbox's connect is a resume); the names below are Via's.
	Via Action
	// Intent is written with Begin while the provider works. IntentNone:
	// no state changes and no intent is written; the ledger alone changes,
	// or (set_egress) a provider call that changes nothing when repeated
	// is made under the sandbox's lock before the ledger is written.
	Intent Intent
	To     State  // the state once it succeeds
	Fails  State  // the state a provider failure leaves: From, except a create's, which fails the sandbox
	Verb   string // how a message names the action: "cannot <Verb> sandbox …"
	Begin  string // the timeline step written with Intent; "" when there is no intent
	Done   string // the timeline step written with the outcome
	Failed string // the timeline step written when the provider refuses; "" when nothing is called
}

// steps are the names an action goes by, whatever state it starts from.
type steps struct{ verb, begin, done, failed string }

var actionSteps = map[Action]steps{
	ActionCreate:     {"create", "creating", "ready", "failed"},
	ActionPause:      {"pause", "pausing", "paused", "pause_failed"},
	ActionHibernate:  {"hibernate", "hibernating", "hibernated", "hibernate_failed"},
	ActionResume:     {"resume", "resuming", "resumed", "resume_failed"},
	ActionDelete:     {"delete", "killing", "killed", "delete_failed"},
	ActionConnect:    {"connect", "", "connected", ""},
	ActionRefresh:    {"refresh", "", "refreshed", ""},
	ActionSetTimeout: {"set the timeout of", "", "timeout_set", ""},
	ActionSetEgress:  {"set the egress policy of", "", "egress_set", ""},
	ActionSnapshot:   {"snapshot", "snapshotting", "snapshotted", "snapshot_failed"},
	ActionFail:       {"fail", "", "failed", ""},
}

// cell is one allowed state × action; everything else is refused.
type cell struct {
	intent Intent
	to     State
	via    Action
}

// table is the state machine. A cell that is not here is a 409 naming the
// state. Killed has no row: nothing leaves it.
var table = map[State]map[Action]cell{
	StateStarting: {
		// A create writes the row starting, with its intent, and settles it
		// running (or failed: see Fails).
		ActionCreate: {IntentCreating, StateRunning, ""},
		ActionDelete: {IntentKilling, StateKilled, ""},
	},
	StateRunning: {
		ActionPause:      {IntentPausing, StatePaused, ""},
		ActionHibernate:  {IntentHibernating, StatePaused, ""},
		ActionDelete:     {IntentKilling, StateKilled, ""},
		ActionConnect:    {IntentNone, StateRunning, ""},
		ActionRefresh:    {IntentNone, StateRunning, ""},
		ActionSetTimeout: {IntentNone, StateRunning, ""},
		ActionSetEgress:  {IntentNone, StateRunning, ""},
		ActionSnapshot:   {IntentSnapshotting, StateRunning, ""},
		ActionFail:       {IntentNone, StateFailed, ""},
	},
	StatePaused: {
		ActionHibernate:  {IntentHibernating, StatePaused, ""}, // refused when already hibernated
		ActionResume:     {IntentResuming, StateRunning, ""},
		ActionDelete:     {IntentKilling, StateKilled, ""},
		ActionConnect:    {IntentResuming, StateRunning, ActionResume},
		ActionSetTimeout: {IntentNone, StatePaused, ""},
		ActionSetEgress:  {IntentNone, StatePaused, ""},
		ActionSnapshot:   {IntentSnapshotting, StatePaused, ""},
		ActionFail:       {IntentNone, StateFailed, ""},
	},
	StateFailed: {
		// Deleting a failed sandbox frees what the provider still holds; it
		// becomes killed and keeps its end reason and diagnostic.
		ActionDelete: {IntentKilling, StateKilled, ""},
	},
}

// Lookup says what a does to a sandbox in state from, and whether from
// allows it at all. It does not look at an intent in progress: Allow does.
func Lookup(from State, a Action) (Transition, bool) {
	c, ok := table[from][a]
	if !ok {
		return Transition{}, false
	}
	t := Transition{Action: a, From: from, Via: c.via, Intent: c.intent, To: c.to, Fails: from}
	if a == ActionCreate {
		t.Fails = StateFailed
	}
	n := actionSteps[a]
	if c.via != "" {
		n = actionSteps[c.via]
	}
	t.Verb, t.Begin, t.Done, t.Failed = n.verb, n.begin, n.done, n.failed
	return t, true
}

// Verb is how a message names a: "cannot <verb> sandbox …".
func (a Action) Verb() string { return actionSteps[a].verb }

// Allow is the transition a takes on sb now, or a 409 naming sb's state:
// refused while another operation is in progress on it, from a state the
// table has no cell for, and a hibernate of a sandbox already hibernated.
func Allow(sb Sandbox, a Action) (Transition, error) {
	verb := a.Verb()
	if c, ok := table[sb.State][a]; ok && c.via != "" {
		verb = c.via.Verb()
	}
	if sb.Intent != IntentNone {
		return Transition{}, Errorf(EConflict, "cannot %s sandbox %s: it is %s (%s in progress)", verb, sb.ProviderSandboxID, sb.State, sb.Intent)
	}
	t, ok := Lookup(sb.State, a)
	if !ok {
		return Transition{}, Errorf(EConflict, "cannot %s sandbox %s: it is %s", verb, sb.ProviderSandboxID, sb.State)
	}
	if a == ActionHibernate && sb.Hibernated {
		return Transition{}, Errorf(EConflict, "cannot hibernate sandbox %s: it is already hibernated", sb.ProviderSandboxID)
	}
	return t, nil
}
