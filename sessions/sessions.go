// Package sessions is the application service for a workspace's agent
// sessions: each on one of its runtimes, with a transcript clients append
// to. Every surface reads and writes them through it, so the rules below
// hold for all of them.
//
// Everyone who acts as a member (or more) in the workspace reads and writes
// its sessions; a project's key reaches only the sessions of its project's
// runtime, as it reaches only that runtime (authz.ReachRuntime). The ledger
// checks titles and messages (sbx.MaxSessionTitleBytes, sbx.SessionRoles,
// sbx.MaxSessionMessageBytes, sbx.MaxSessionAppend).
package sessions

import (
	"context"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/authz"
)

// Store is what the service reads and writes of the ledger; *ledger.Store
// satisfies it.
type Store interface {
	// Atomically runs fn in one ledger transaction: the reads and writes
	// fn makes with the context it is given (ledger.Store.Atomically). A
	// write and the check that allows it run in one.
	Atomically(ctx context.Context, fn func(ctx context.Context) error) error

	GetWorkspace(ctx context.Context, orgID, ref string) (sbx.Workspace, error)
	Runtime(ctx context.Context, projectID string) (sbx.Runtime, error)
	GetRuntime(ctx context.Context, orgID, workspaceID, id string) (sbx.Runtime, error)
	Sessions(ctx context.Context, orgID, workspaceID, runtimeID string, p sbx.Page) ([]sbx.Session, string, error)
	GetSession(ctx context.Context, orgID, workspaceID, id string) (sbx.Session, error)
	CreateSession(ctx context.Context, orgID, workspaceID, runtimeID, title, createdBy string, now time.Time) (sbx.Session, error)
	SessionMessages(ctx context.Context, orgID, workspaceID, id string, p sbx.Page) ([]sbx.SessionMessage, string, error)
	AppendSessionMessages(ctx context.Context, orgID, workspaceID, id string, msgs []sbx.SessionMessage, now time.Time) ([]sbx.SessionMessage, error)
}

// Service lists, makes, reads and appends to sessions for callers; a
// workspace is named (ID or name) within the caller's org.
type Service struct {
	store  Store
	policy authz.Policy
	clock  sbx.Clock
}

// New returns the service over store, deciding with policy, timing with clock.
func New(store Store, policy authz.Policy, clock sbx.Clock) *Service {
	return &Service{store: store, policy: policy, clock: clock}
}

// List answers a page of the sessions of workspace ws, oldest first: with
// runtimeID, that runtime's (one c reaches); without, every one c reaches (a
// project's key: its project's runtime's).
func (s *Service) List(ctx context.Context, c sbx.Caller, ws, runtimeID string, p sbx.Page) ([]sbx.Session, string, error) {
	w, err := s.workspace(ctx, c, ws, "listing sessions")
	if err != nil {
		return nil, "", err
	}
	switch {
	case runtimeID != "":
		_, err = s.runtime(ctx, c, w, runtimeID)
	case !c.OrgWide():
		var rt sbx.Runtime
		rt, err = s.store.Runtime(ctx, c.Key.ProjectID)
		runtimeID = rt.ID // in another workspace it matches none here
	}
	if err != nil {
		return nil, "", err
	}
	return s.store.Sessions(ctx, w.OrgID, w.ID, runtimeID, p)
}

// Create starts a session titled title on runtime runtimeID of workspace ws,
// made by c's member or, for a key that acts for no member, by c's key.
func (s *Service) Create(ctx context.Context, c sbx.Caller, ws, runtimeID, title string) (se sbx.Session, err error) {
	by := c.User.ID
	if by == "" {
		by = c.Key.ID
	}
	err = s.store.Atomically(ctx, func(ctx context.Context) error {
		w, err := s.workspace(ctx, c, ws, "creating a session")
		if err != nil {
			return err
		}
		if runtimeID == "" {
			return sbx.Invalid("runtime_id", "runtime_id is required: the runtime the session is on")
		}
		rt, err := s.runtime(ctx, c, w, runtimeID)
		if err == nil {
			se, err = s.store.CreateSession(ctx, w.OrgID, w.ID, rt.ID, title, by, s.clock.Now())
		}
		return err
	})
	return se, err
}

// Get answers session id of workspace ws.
func (s *Service) Get(ctx context.Context, c sbx.Caller, ws, id string) (sbx.Session, error) {
	return s.session(ctx, c, ws, id, "reading a session")
}

// Messages answers a page of the transcript of session id of workspace ws,
// by seq: the page's cursor is a seq, and the page holds the messages after
// it.
func (s *Service) Messages(ctx context.Context, c sbx.Caller, ws, id string, p sbx.Page) ([]sbx.SessionMessage, string, error) {
	se, err := s.session(ctx, c, ws, id, "reading a session")
	if err != nil {
		return nil, "", err
	}
	return s.store.SessionMessages(ctx, se.OrgID, se.WorkspaceID, se.ID, p)
}

// Append appends msgs (their roles and contents) to the transcript of
// session id of workspace ws, all or none, and answers them numbered.
func (s *Service) Append(ctx context.Context, c sbx.Caller, ws, id string, msgs []sbx.SessionMessage) (out []sbx.SessionMessage, err error) {
	err = s.store.Atomically(ctx, func(ctx context.Context) error {
		se, err := s.session(ctx, c, ws, id, "appending to a session")
		if err == nil {
			out, err = s.store.AppendSessionMessages(ctx, se.OrgID, se.WorkspaceID, se.ID, msgs, s.clock.Now())
		}
		return err
	})
	return out, err
}

// workspace finds workspace ref in c's org and checks that c acts as a
// member (or more) there (what names the action).
func (s *Service) workspace(ctx context.Context, c sbx.Caller, ref, what string) (sbx.Workspace, error) {
	ws, err := s.store.GetWorkspace(ctx, c.Org.ID, ref)
	if err == nil {
		_, err = s.policy.In(ctx, c, ws, sbx.RoleMember, what)
	}
	return ws, err
}

// runtime finds runtime id of workspace ws, one c reaches.
func (s *Service) runtime(ctx context.Context, c sbx.Caller, ws sbx.Workspace, id string) (sbx.Runtime, error) {
	rt, err := s.store.GetRuntime(ctx, ws.OrgID, ws.ID, id)
	if err == nil {
		err = authz.ReachRuntime(c, rt)
	}
	return rt, err
}

// session finds session id of workspace ref, for a caller who is a member
// there and reaches the session's runtime (what names the action); one on a
// runtime c does not reach is not found.
func (s *Service) session(ctx context.Context, c sbx.Caller, ref, id, what string) (sbx.Session, error) {
	ws, err := s.workspace(ctx, c, ref, what)
	if err != nil {
		return sbx.Session{}, err
	}
	se, err := s.store.GetSession(ctx, ws.OrgID, ws.ID, id)
	if err != nil || c.OrgWide() { // every other key reaches every runtime of the workspace
		return se, err
	}
	rt, err := s.store.GetRuntime(ctx, ws.OrgID, ws.ID, se.RuntimeID)
	if err == nil && authz.ReachRuntime(c, rt) != nil {
		err = sbx.Errorf(sbx.ENotFound, "session %s not found in this workspace", se.ID)
	}
	if err != nil {
		return sbx.Session{}, err
	}
	return se, nil
}
