package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/authz"
	"github.com/sbxdev/sbx/internal/agentcall"
)

// ReadyRequest says when a template's sandbox is ready to be captured: its
// start command (the agent starts it at boot) has made Command exit 0, or
// something listens on Port; within Timeout.
type ReadyRequest struct {
	Command   string
	Port      int
	Resources sbx.Resources // the sandboxes that restore it have this size; others boot
	Timeout   time.Duration // 0: DefaultReadyWait
	// WarmCode are languages whose default code context starts before the
	// capture, so that its kernel is warm in the sandboxes that restore it.
	WarmCode []string
}

// ReadyState is where a template's ready snapshot stands: preparing (in
// this serve), ready (Snapshot), failed (Diagnostic, the last preparation
// in this serve) or none.
type ReadyState struct {
	State      string
	Snapshot   *sbx.Snapshot
	Diagnostic string
}

// PrepareTemplate starts giving a template a ready snapshot (the
// operator's), in the background: a sandbox of it boots, runs its start
// command, is waited for until the readiness check passes, and is
// captured; from then on a create of the template of that size restores
// it instead of booting, while the template's version stays. The
// template's earlier ready snapshots go. ReadyOf follows it.
func (m *Manager) PrepareTemplate(ctx context.Context, c sbx.Caller, template string, r ReadyRequest) (ReadyState, error) {
	if err := authz.Operator(c, "prepare a template's ready snapshot"); err != nil {
		return ReadyState{}, err
	}
	if r.Timeout == 0 {
		r.Timeout = DefaultReadyWait
	}
	if err := checkReady(template, r); err != nil {
		return ReadyState{}, err
	}
	prov, err := m.provider(m.cfg.DefaultProvider)
	if err != nil {
		return ReadyState{}, err
	}
	d, ok := prov.(sbx.TemplateDefaulter)
	if _, snaps := prov.(sbx.Snapshotter); !ok || !snaps || !prov.Capabilities().Snapshots {
		return ReadyState{}, sbx.Errorf(sbx.EUnsupported, "provider %s cannot give templates ready snapshots: it needs snapshots and versioned templates", prov.Name())
	}
	if _, err := d.TemplateDefaults(ctx, template, ""); err != nil {
		return ReadyState{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if why, ok := m.preparing[template]; ok && why == "" {
		return ReadyState{}, sbx.Errorf(sbx.EConflict, "template %s's ready snapshot is being prepared", template)
	}
	m.preparing[template] = ""
	m.wg.Go(func() {
		_, err := m.prepare(context.Background(), c, template, r)
		m.mu.Lock()
		defer m.mu.Unlock()
		if err != nil {
			m.preparing[template] = "failed: " + providerMessage(err)
			m.log.Warn("preparing a template's ready snapshot", "template", template, "err", err)
			return
		}
		delete(m.preparing, template)
	})
	return ReadyState{State: "preparing"}, nil
}

// ReadyOf says where template's ready snapshot stands (the operator's).
func (m *Manager) ReadyOf(ctx context.Context, c sbx.Caller, template string) (ReadyState, error) {
	if err := authz.Operator(c, "read a template's ready snapshot"); err != nil {
		return ReadyState{}, err
	}
	m.mu.Lock()
	why, ok := m.preparing[template]
	m.mu.Unlock()
	if ok && why == "" {
		return ReadyState{State: "preparing"}, nil
	}
	snaps, err := m.store.ReadySnapshots(ctx, template)
	switch {
	case err != nil:
		return ReadyState{}, err
	case ok:
		return ReadyState{State: "failed", Diagnostic: strings.TrimPrefix(why, "failed: ")}, nil
	case len(snaps) > 0:
		return ReadyState{State: "ready", Snapshot: &snaps[0]}, nil
	}
	return ReadyState{State: "none"}, nil
}

// checkReady checks a preparation's request.
func checkReady(template string, r ReadyRequest) error {
	var p sbx.Problems
	CheckTemplate(&p, "template", template)
	if (r.Command == "") == (r.Port == 0) {
		p.Add("command", "give a readiness check: command or port, one of them")
	}
	if r.Port < 0 || r.Port > 65535 {
		p.Add("port", "port must be between 1 and 65535")
	}
	if r.Timeout <= 0 || r.Timeout > 30*time.Minute {
		p.Add("timeout", "timeout must be between 1 and 1800 seconds")
	}
	checkWarmCode(&p, "warmCode", r.WarmCode)
	return p.Err()
}

// prepare makes template's ready snapshot.
func (m *Manager) prepare(ctx context.Context, c sbx.Caller, template string, r ReadyRequest) (sbx.Snapshot, error) {
	sb, err := m.Create(ctx, c, CreateRequest{TemplateID: template, Resources: r.Resources, Kind: sbx.KindTask, WaitReady: true,
		Timeout: r.Timeout + 5*time.Minute, PoolMode: sbx.PoolBypass, cold: true, Metadata: map[string]string{ReadyKey: template}})
	if sb.ID != "" {
		defer m.kill(context.WithoutCancel(ctx), sb.ID, sbx.EndDeleted)
	}
	if err != nil {
		return sbx.Snapshot{}, err
	}
	if err := m.awaitReady(ctx, sb, r); err != nil {
		return sbx.Snapshot{}, err
	}
	if err := m.warmCode(ctx, sb, r.WarmCode); err != nil {
		return sbx.Snapshot{}, err
	}
	sn, err := m.snapshot(ctx, sb.ID, SnapshotRequest{Name: template, Memory: true}, sbx.PurposeTemplate, "the ready snapshot of template "+template)
	if err != nil {
		return sn, err
	}
	olds, err := m.store.ReadySnapshots(ctx, template)
	if err != nil {
		return sn, err
	}
	for _, old := range olds {
		if old.ID != sn.ID {
			m.deleteSnapshot(context.WithoutCancel(ctx), old)
		}
	}
	return sn, nil
}

// DefaultReadyWait is how long a preparation waits for its readiness check
// when its request names no timeout.
const DefaultReadyWait = 2 * time.Minute

// ReadyKey is the metadata key of the sandbox a ready snapshot is made of.
const ReadyKey = "sbx.readyTemplate"

// awaitReady runs r's check in sb every 200 ms until it passes or r's
// timeout runs out (a 504 naming the check and its last output).
func (m *Manager) awaitReady(ctx context.Context, sb sbx.Sandbox, r ReadyRequest) error {
	addr, err := m.agentAddr(ctx, sb)
	if err != nil {
		return err
	}
	check, what := r.Command, fmt.Sprintf("command %q", r.Command)
	if r.Port != 0 {
		check, what = fmt.Sprintf("exec bash -c ': </dev/tcp/127.0.0.1/%d' 2>&1", r.Port), fmt.Sprintf("a listener on port %d", r.Port)
	}
	deadline := m.clock.Now().Add(r.Timeout)
	last := ""
	for {
		code, out, err := agentcall.Run(ctx, addr, sb.AccessToken, check, nil, time.Minute)
		if err == nil && code == 0 {
			return nil
		}
		if err == nil && (code == 126 || code == 127) && r.Command != "" { // never passes
			return sbx.Invalid("command", "readiness command %q cannot run in template %s's sandbox (exit %d): %.200s", r.Command, sb.TemplateID, code, out)
		}
		if err != nil {
			out = err.Error()
		}
		last = out
		if !m.clock.Now().Before(deadline) {
			return sbx.Errorf(sbx.ETimeout, "template %s's sandbox was not ready within %s: %s did not pass (last output: %.200s)", sb.TemplateID, r.Timeout, what, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-m.clock.After(200 * time.Millisecond):
		}
	}
}

// DropReady deletes a template's ready snapshots: creates boot again.
func (m *Manager) DropReady(ctx context.Context, c sbx.Caller, template string) error {
	if err := authz.Operator(c, "delete a template's ready snapshot"); err != nil {
		return err
	}
	olds, err := m.store.ReadySnapshots(ctx, template)
	if err != nil {
		return err
	}
	if len(olds) == 0 {
		return sbx.Errorf(sbx.ENotFound, "template %s has no ready snapshot", template)
	}
	for _, old := range olds {
		if _, err := m.deleteSnapshot(ctx, old); err != nil {
			return err
		}
	}
	return nil
}

// readySnapshot is the ready snapshot a create restores in place of a
// boot, if its template has one of its current version and the create's
// options allow.
func (m *Manager) readySnapshot(ctx context.Context, req CreateRequest, defaults sbx.TemplateDefaults) (*sbx.Snapshot, error) {
	if req.cold || req.Image != nil || req.SnapshotID != "" || len(req.Volumes) > 0 || req.Resources.GPU != nil || defaults.Version == "" {
		return nil, nil
	}
	snaps, err := m.store.ReadySnapshots(ctx, req.TemplateID)
	if err != nil {
		return nil, err
	}
	for _, sn := range snaps {
		if sn.TemplateVersion == defaults.Version && sn.Resources == req.Resources && sn.Provider == req.Provider {
			return &sn, nil
		}
	}
	return nil, nil
}

// codeLanguages are the languages of code contexts.
var codeLanguages = []string{"python", "bash", "javascript"}

func checkWarmCode(p *sbx.Problems, field string, langs []string) {
	for _, l := range langs {
		if !slices.Contains(codeLanguages, l) {
			p.Add(field, "%s is not a language of code contexts: python, bash or javascript", l)
		}
	}
}

// warmCode starts the default code context of each language in sb: an
// empty run starts its kernel.
func (m *Manager) warmCode(ctx context.Context, sb sbx.Sandbox, langs []string) error {
	if len(langs) == 0 {
		return nil
	}
	addr, err := m.agentAddr(ctx, sb)
	if err != nil {
		return err
	}
	for _, l := range langs {
		if _, err := agentcall.For(sb, addr).RunCode(ctx, apiv1.ExecuteCodeRequest{Language: l}); err != nil {
			return sbx.Errorf(sbx.EInvalid, "template %s cannot warm a %s code context: %s", sb.TemplateID, l, err)
		}
	}
	return nil
}
