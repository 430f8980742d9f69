package lifecycle

import (
	"context"
	"fmt"
	"time"

	"github.com/sbxdev/sbx"
)

// Admission of a create or a timeout by who asks: the KYC gate and the
// plan's longest timeout. The plan's compute and disk limits, which
// concurrent requests could race past, are checked by the ledger in the
// transaction that records the compute (ledger/admission.go). What the host
// has room for is the provider's to say: its Admit at create, its
// AdmitResume at resume (the local provider's disk reserve).

// admit refuses a create the caller may not make and gives a create that
// names no timeout the server's default, cut to the plan's longest.
func (m *Manager) admit(c sbx.Caller, req *CreateRequest) error {
	if err := m.verified(c); err != nil {
		return err
	}
	if req.Timeout == 0 {
		req.Timeout = m.defaultTimeout(c)
	}
	return planTimeout(c, "timeout", req.Timeout)
}

// verified refuses an unverified caller where the server requires
// verification (KYC) for what starts compute.
func (m *Manager) verified(c sbx.Caller) error {
	if m.cfg.RequireKYC && !c.Verified() {
		return kycRequired(c)
	}
	return nil
}

// defaultTimeout is the server's default timeout cut to the caller's plan's
// longest.
func (m *Manager) defaultTimeout(c sbx.Caller) time.Duration {
	if max := c.Org.Plan.MaxTimeout; max > 0 {
		return min(m.cfg.DefaultTimeout, max)
	}
	return m.cfg.DefaultTimeout
}

// kycRequired is the refusal of a create by an unverified caller: it says
// what is unverified and what to do about it.
func kycRequired(c sbx.Caller) error {
	state := fmt.Sprintf("org %s is %s", c.Org.Name, c.Org.KYCStatus)
	pending := c.Org.KYCStatus == sbx.KYCPending
	if c.User.ID != "" {
		state += fmt.Sprintf(" and user %s is %s", c.User.Email, c.User.KYCStatus)
		pending = pending || c.User.KYCStatus == sbx.KYCPending
	}
	next := "complete identity verification with the KYC provider of this sbx"
	if pending {
		next = "wait for the verification in progress to complete"
	}
	return sbx.Errorf(sbx.EKYCRequired, "creating a sandbox needs a verified org or user, and %s: %s, or ask the operator of this sbx to verify the org (sbx org verify %s)",
		state, next, c.Org.Name)
}

// timeoutAllowed bounds a caller's timeout by the server's limits and its
// org's plan.
func (m *Manager) timeoutAllowed(c sbx.Caller, field string, d time.Duration) error {
	if err := m.checkTimeout(field, d); err != nil {
		return err
	}
	return planTimeout(c, field, d)
}

// planTimeout bounds a timeout, or a refresh's duration, by the caller's plan.
func planTimeout(c sbx.Caller, field string, d time.Duration) error {
	if max := c.Org.Plan.MaxTimeout; max > 0 && d > max {
		return sbx.Errorf(sbx.EPlanLimit, "plan limit: a sandbox's %s may be at most %d seconds (asked for %d); ask for less, or ask the operator for a larger plan",
			field, int64(max/time.Second), int64((d+time.Second-1)/time.Second))
	}
	return nil
}

// admitResume asks sb's provider, when it admits resumes, whether its host
// has room for sb to run again.
func (m *Manager) admitResume(ctx context.Context, sb sbx.Sandbox) error {
	p, err := m.provider(sb.Provider)
	if err != nil {
		return nil // the resume itself answers for a missing provider
	}
	if a, ok := p.(sbx.ResumeAdmitter); ok && !sb.Handle.IsZero() {
		return a.AdmitResume(ctx, sb.Handle)
	}
	return nil
}
