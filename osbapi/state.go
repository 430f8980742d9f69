package osbapi

import (
	"strings"
	"time"

	"github.com/sbxdev/sbx"
)

// OpenSandbox's sandbox states.
const (
	statePending    = "Pending"
	stateRunning    = "Running"
	statePausing    = "Pausing"
	statePaused     = "Paused"
	stateResuming   = "Resuming"
	stateStopping   = "Stopping"
	stateTerminated = "Terminated"
	stateFailed     = "Failed"
)

// liveStates are the states a list shows when it names none: a sandbox
// that ended stays in sbx's ledger, but is gone for OpenSandbox's lists.
var liveStates = []string{statePending, stateRunning, statePausing, statePaused, stateResuming, stateStopping}

// sbxStates are the sbx states a sandbox in each OpenSandbox state is in
// (a transition in progress is an sbx state's intent).
var sbxStates = map[string][]sbx.State{
	statePending:    {sbx.StateStarting},
	stateRunning:    {sbx.StateRunning},
	statePausing:    {sbx.StateRunning},
	statePaused:     {sbx.StatePaused},
	stateResuming:   {sbx.StatePaused},
	stateStopping:   {sbx.StateStarting, sbx.StateRunning, sbx.StatePaused},
	stateTerminated: {sbx.StateKilled},
	stateFailed:     {sbx.StateFailed},
}

// stateName is the OpenSandbox state name equal to s but for case, or "".
func stateName(s string) string {
	for name := range sbxStates {
		if strings.EqualFold(name, s) {
			return name
		}
	}
	return ""
}

// status is OpenSandbox's SandboxStatus.
type status struct {
	State            string     `json:"state"`
	Reason           string     `json:"reason,omitempty"`
	Message          string     `json:"message,omitempty"`
	LastTransitionAt *time.Time `json:"lastTransitionAt,omitempty"`
}

// statusOf is sb's state as OpenSandbox names it: sbx's public state, or
// the transition its intent says is under way; the reason is why it is
// paused or ended.
func statusOf(sb sbx.Sandbox) status {
	var st status
	switch sb.State {
	case sbx.StateStarting:
		st.State = statePending
	case sbx.StateRunning:
		st.State = stateRunning
	case sbx.StatePaused:
		st.State, st.Reason = statePaused, string(sb.PauseReason)
	case sbx.StateKilled:
		st.State, st.Reason = stateTerminated, string(sb.EndReason)
	default:
		st.State, st.Reason = stateFailed, string(sb.EndReason)
	}
	switch sb.Intent {
	case sbx.IntentPausing, sbx.IntentHibernating:
		st.State = statePausing
	case sbx.IntentResuming:
		st.State = stateResuming
	case sbx.IntentKilling:
		st.State = stateStopping
	}
	st.Message = sb.Diagnostic
	if !sb.UpdatedAt.IsZero() {
		at := sb.UpdatedAt.UTC()
		st.LastTransitionAt = &at
	}
	return st
}
