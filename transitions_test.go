package sbx

import (
	"fmt"
	"testing"
)

// want is the state machine as the API documents it, written out cell by
// cell apart from the table it checks: every state × action that is allowed,
// with its intent and resulting state. Every cell not here is refused.
var want = map[State]map[Action]struct {
	intent Intent
	to     State
	via    Action
}{
	StateStarting: {
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
		ActionHibernate:  {IntentHibernating, StatePaused, ""},
		ActionResume:     {IntentResuming, StateRunning, ""},
		ActionDelete:     {IntentKilling, StateKilled, ""},
		ActionConnect:    {IntentResuming, StateRunning, ActionResume},
		ActionSetTimeout: {IntentNone, StatePaused, ""},
		ActionSetEgress:  {IntentNone, StatePaused, ""},
		ActionSnapshot:   {IntentSnapshotting, StatePaused, ""},
		ActionFail:       {IntentNone, StateFailed, ""},
	},
	StateFailed: {
		ActionDelete: {IntentKilling, StateKilled, ""},
	},
}

// names are each action's verb and timeline steps.
var names = map[Action][4]string{ // verb, begin, done, failed
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

func TestTransitionTable(t *testing.T) {
	if len(Actions) != len(names) {
		t.Fatalf("Actions has %d actions, the test knows %d", len(Actions), len(names))
	}
	for _, from := range States {
		for _, a := range Actions {
			w, allowed := want[from][a]
			got, ok := Lookup(from, a)
			if ok != allowed {
				t.Errorf("Lookup(%s, %s) allowed = %v, want %v", from, a, ok, allowed)
				continue
			}
			if !ok {
				if got != (Transition{}) {
					t.Errorf("Lookup(%s, %s) refused but answered %+v", from, a, got)
				}
				continue
			}
			n := names[a]
			if w.via != "" {
				n = names[w.via]
			}
			fails := from
			if a == ActionCreate {
				fails = StateFailed
			}
			wt := Transition{Action: a, From: from, Via: w.via, Intent: w.intent, To: w.to, Fails: fails,
				Verb: n[0], Begin: n[1], Done: n[2], Failed: n[3]}
			if got != wt {
				t.Errorf("Lookup(%s, %s) = %+v, want %+v", from, a, got, wt)
			}
			if (got.Intent == IntentNone) != (got.Begin == "") {
				t.Errorf("%s from %s: intent %q with begin step %q: a step is written with every intent and only then", a, from, got.Intent, got.Begin)
			}
			if got.Intent == IntentNone && got.Failed != "" {
				t.Errorf("%s from %s calls no provider but names a failure step %q", a, from, got.Failed)
			}
		}
	}
	for s := range table {
		if !s.Valid() {
			t.Errorf("the table has a row for %q, no public state", s)
		}
	}
	if _, ok := table[StateKilled]; ok {
		t.Error("killed has a row: nothing may leave it")
	}
}

func TestAllow(t *testing.T) {
	for _, from := range States {
		for _, a := range Actions {
			sb := Sandbox{ProviderSandboxID: "sbx-abc", State: from}
			got, err := Allow(sb, a)
			w, allowed := want[from][a]
			verb := names[a][0]
			if w.via != "" {
				verb = names[w.via][0]
			}
			if allowed {
				if err != nil {
					t.Errorf("Allow(%s, %s) = %v, want allowed", from, a, err)
				} else if l, _ := Lookup(from, a); got != l {
					t.Errorf("Allow(%s, %s) = %+v, Lookup says %+v", from, a, got, l)
				}
			} else {
				wantConflict(t, err, fmt.Sprintf("cannot %s sandbox sbx-abc: it is %s", verb, from))
			}
			// With an operation in progress, every action is refused, naming it.
			for _, in := range []Intent{IntentCreating, IntentPausing, IntentHibernating, IntentResuming, IntentKilling} {
				sb.Intent = in
				_, err := Allow(sb, a)
				wantConflict(t, err, fmt.Sprintf("cannot %s sandbox sbx-abc: it is %s (%s in progress)", verb, from, in))
			}
		}
	}
}

// The messages the API answers, as clients and the e2e tests see them.
func TestAllowMessages(t *testing.T) {
	for _, c := range []struct {
		sb   Sandbox
		a    Action
		want string
	}{
		{Sandbox{ProviderSandboxID: "sbx-k", State: StateKilled}, ActionPause, "cannot pause sandbox sbx-k: it is killed"},
		{Sandbox{ProviderSandboxID: "sbx-r", State: StateRunning}, ActionResume, "cannot resume sandbox sbx-r: it is running"},
		{Sandbox{ProviderSandboxID: "sbx-p", State: StatePaused}, ActionRefresh, "cannot refresh sandbox sbx-p: it is paused"},
		{Sandbox{ProviderSandboxID: "sbx-f", State: StateFailed}, ActionSetTimeout, "cannot set the timeout of sandbox sbx-f: it is failed"},
		{Sandbox{ProviderSandboxID: "sbx-k", State: StateKilled}, ActionConnect, "cannot connect sandbox sbx-k: it is killed"},
		{Sandbox{ProviderSandboxID: "sbx-k", State: StateKilled}, ActionDelete, "cannot delete sandbox sbx-k: it is killed"},
		{Sandbox{ProviderSandboxID: "sbx-s", State: StateStarting, Intent: IntentCreating}, ActionDelete, "cannot delete sandbox sbx-s: it is starting (creating in progress)"},
		{Sandbox{ProviderSandboxID: "sbx-p", State: StatePaused, Intent: IntentHibernating}, ActionConnect, "cannot resume sandbox sbx-p: it is paused (hibernating in progress)"},
		{Sandbox{ProviderSandboxID: "sbx-h", State: StatePaused, Hibernated: true}, ActionHibernate, "cannot hibernate sandbox sbx-h: it is already hibernated"},
	} {
		_, err := Allow(c.sb, c.a)
		wantConflict(t, err, c.want)
	}
	// Hibernated refuses only a second hibernate: it resumes, is deleted, re-timed.
	h := Sandbox{ProviderSandboxID: "sbx-h", State: StatePaused, Hibernated: true}
	for _, a := range []Action{ActionResume, ActionDelete, ActionConnect, ActionSetTimeout} {
		if _, err := Allow(h, a); err != nil {
			t.Errorf("Allow(hibernated, %s) = %v", a, err)
		}
	}
	// The in-progress refusal comes first, as it did before the table.
	h.Intent = IntentResuming
	_, err := Allow(h, ActionHibernate)
	wantConflict(t, err, "cannot hibernate sandbox sbx-h: it is paused (resuming in progress)")
}

func TestActionVerb(t *testing.T) {
	for a, n := range names {
		if got := a.Verb(); got != n[0] {
			t.Errorf("%s.Verb() = %q, want %q", a, got, n[0])
		}
	}
	if got := Action("fork").Verb(); got != "" {
		t.Errorf("an unknown action's verb = %q", got)
	}
	if _, err := Allow(Sandbox{State: StateRunning}, Action("fork")); ErrorCode(err) != EConflict {
		t.Errorf("an unknown action is allowed: %v", err)
	}
}

func wantConflict(t *testing.T, err error, msg string) {
	t.Helper()
	if ErrorCode(err) != EConflict || ErrorMessage(err) != msg {
		t.Errorf("got %v (%s), want a conflict %q", err, ErrorCode(err), msg)
	}
}

// A final state is one the table lets nothing leave but a delete's cleanup.
func TestFinalStatesAreTheTables(t *testing.T) {
	for _, s := range States {
		onlyDelete := true
		for _, a := range Actions {
			if _, ok := Lookup(s, a); ok && a != ActionDelete {
				onlyDelete = false
			}
		}
		if s.Final() != onlyDelete {
			t.Errorf("%s: Final = %v, but the table lets only a delete leave it: %v", s, s.Final(), onlyDelete)
		}
	}
}
