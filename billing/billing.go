// Package billing is the wallet of an org as every surface sees it: its
// balance and newest settlements, what its settlements paid over a time
// range (by project, sandbox, kind, provider and resource), the price
// table, and the operator's top-ups and new rates. It owns who may read and
// change them, the defaults (the last 30 days, the newest 100 settlements)
// and the sums; the ledger settles and stores (docs/ARCHITECTURE.md,
// "Credits"). It answers domain values and *sbx.Errors; each surface renders
// them its own way.
package billing

import (
	"context"
	"sort"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/authz"
	"github.com/sbxdev/sbx/pricing"
)

// Store is what billing reads and writes of the ledger; *ledger.Store
// satisfies it.
type Store interface {
	GetOrg(ctx context.Context, ref string) (sbx.Org, error)
	Projects(ctx context.Context, orgID string) ([]sbx.Project, error)
	Balance(ctx context.Context, orgID string) (int64, error)
	Settlements(ctx context.Context, orgID string, limit int) ([]sbx.Settlement, error)
	Spending(ctx context.Context, orgID string, from, to time.Time) ([]sbx.Spend, error)
	StorageSpending(ctx context.Context, orgID string, from, to time.Time) ([]sbx.StorageSpend, error)
	Rates(ctx context.Context) (pricing.Table, error)
	AddRate(ctx context.Context, r pricing.Rate, now time.Time) error
	TopUp(ctx context.Context, orgID string, micros int64, note string, now time.Time) (int64, error)
}

// Service answers the wallet's questions and makes its changes.
type Service struct {
	Store Store
	Clock sbx.Clock
}

// DefaultSpendingRange is the time range of a spending report that names
// no start: the 30 days before its end.
const DefaultSpendingRange = 30 * 24 * time.Hour

// DefaultSettlements is how many settlements a wallet shows when not told.
const DefaultSettlements = 100

// Wallet is an org's balance and its newest settlements, newest first.
type Wallet struct {
	Org         sbx.Org
	Balance     int64 // micro-credits
	Settlements []sbx.Settlement
}

// Balance is an org's balance after a change.
type Balance struct {
	Org     sbx.Org
	Balance int64 // micro-credits
}

// Resources splits an amount of micro-credits by what it paid for.
type Resources struct {
	CPU, Memory, GPU, Storage int64 // Storage: paused sandboxes' state
	Snapshots, Volumes        int64 // what snapshots and volumes held
}

// ProjectSpend is what one project's sandboxes paid.
type ProjectSpend struct {
	Project sbx.Project
	Credits int64 // micro-credits
}

// Spending is what an org's settlements ending in (From, To] paid, in
// micro-credits, summed every way: each breakdown sums to Total.
type Spending struct {
	Org        sbx.Org
	From, To   time.Time
	Total      int64
	ByResource Resources
	ByProject  []ProjectSpend // projects that paid something, by name
	ByKind     map[sbx.Kind]int64
	ByProvider map[string]int64
	Sandboxes  []sbx.Spend // per sandbox, as the ledger orders them (largest first)
}

// NewRate is a price the operator sets: CreditsPerSecond is a decimal
// string of at most 9 decimals; EffectiveAt nil is now.
type NewRate struct {
	Provider         string // "": any provider without a rate of its own
	Resource         pricing.Resource
	GPUType          string
	GPUShare         int
	CreditsPerSecond string
	EffectiveAt      *time.Time
}

// readWallet refuses callers who may not read the org's credits: all but
// its owners and admins.
func readWallet(c sbx.Caller, ref string) error {
	if err := authz.InOrg(c, ref); err != nil {
		return err
	}
	return authz.Need(c, sbx.RoleAdmin, "reading the org's credits")
}

// Wallet is the balance and the newest limit settlements (0: the default)
// of the caller's org, ref (its ID or name); for its owners and admins.
func (s Service) Wallet(ctx context.Context, c sbx.Caller, ref string, limit int) (Wallet, error) {
	if err := readWallet(c, ref); err != nil {
		return Wallet{}, err
	}
	if limit == 0 {
		limit = DefaultSettlements
	}
	balance, err := s.Store.Balance(ctx, c.Org.ID)
	if err != nil {
		return Wallet{}, err
	}
	list, err := s.Store.Settlements(ctx, c.Org.ID, limit)
	if err != nil {
		return Wallet{}, err
	}
	return Wallet{Org: c.Org, Balance: balance, Settlements: list}, nil
}

// Spending is what the settlements of the caller's org, ref, ending in
// (from, to] paid (its sandboxes', and its snapshots' and volumes'
// storage), summed by project, sandbox, kind, provider and resource;
// for its owners and admins. from and to are RFC 3339 times: to by default
// now, from by default DefaultSpendingRange before to.
func (s Service) Spending(ctx context.Context, c sbx.Caller, ref, from, to string) (Spending, error) {
	if err := readWallet(c, ref); err != nil {
		return Spending{}, err
	}
	start, end, err := s.timeRange(from, to)
	if err != nil {
		return Spending{}, err
	}
	spend, err := s.Store.Spending(ctx, c.Org.ID, start, end)
	if err != nil {
		return Spending{}, err
	}
	storage, err := s.Store.StorageSpending(ctx, c.Org.ID, start, end)
	if err != nil {
		return Spending{}, err
	}
	projects, err := s.Store.Projects(ctx, c.Org.ID)
	if err != nil {
		return Spending{}, err
	}
	out := Sum(spend, storage, projects)
	out.Org, out.From, out.To = c.Org, start, end
	return out, nil
}

// timeRange reads from and to (RFC 3339): by default the last 30 days.
func (s Service) timeRange(from, to string) (time.Time, time.Time, error) {
	end, err := timeParam(to, "to", s.Clock.Now())
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	start, err := timeParam(from, "from", end.Add(-DefaultSpendingRange))
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	if !start.Before(end) {
		return time.Time{}, time.Time{}, sbx.Invalid("from", "from (%s) must be before to (%s)", start.Format(time.RFC3339), end.Format(time.RFC3339))
	}
	return start, end, nil
}

func timeParam(v, name string, def time.Time) (time.Time, error) {
	if v == "" {
		return def, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, sbx.Invalid(name, "%s %q is not an RFC 3339 time like 2026-01-02T15:04:05Z", name, v)
	}
	return t.UTC(), nil
}

// Sum sums per-sandbox spending and storage spending into every
// breakdown (storage's kind is "snapshot" or "volume"); only projects (of
// projects) that paid something are listed, by name.
func Sum(spend []sbx.Spend, storage []sbx.StorageSpend, projects []sbx.Project) Spending {
	out := Spending{ByProject: []ProjectSpend{}, ByKind: map[sbx.Kind]int64{}, ByProvider: map[string]int64{}, Sandboxes: []sbx.Spend{}}
	byProject := map[string]int64{}
	for _, sp := range spend {
		out.Total += sp.Total
		out.ByResource.CPU += sp.CPU
		out.ByResource.Memory += sp.Memory
		out.ByResource.GPU += sp.GPU
		out.ByResource.Storage += sp.Storage
		byProject[sp.ProjectID] += sp.Total
		out.ByKind[sp.Kind] += sp.Total
		out.ByProvider[sp.Provider] += sp.Total
		out.Sandboxes = append(out.Sandboxes, sp)
	}
	for _, sp := range storage {
		out.Total += sp.Total
		if sp.Kind == sbx.StorageVolume {
			out.ByResource.Volumes += sp.Total
		} else {
			out.ByResource.Snapshots += sp.Total
		}
		byProject[sp.ProjectID] += sp.Total
		out.ByKind[sbx.Kind(sp.Kind)] += sp.Total
		out.ByProvider[sp.Provider] += sp.Total
	}
	for _, p := range projects {
		if n, ok := byProject[p.ID]; ok {
			out.ByProject = append(out.ByProject, ProjectSpend{Project: p, Credits: n})
		}
	}
	sort.Slice(out.ByProject, func(i, j int) bool { return out.ByProject[i].Project.Name < out.ByProject[j].Project.Name })
	return out
}

// Rates is the price table: the defaults and every rate the operator set.
// Any caller may read it.
func (s Service) Rates(ctx context.Context, c sbx.Caller) (pricing.Table, error) {
	return s.Store.Rates(ctx)
}

// AddRate sets a price from its effective time on (not in the past: time
// already settled keeps its prices); the operator's.
func (s Service) AddRate(ctx context.Context, c sbx.Caller, n NewRate) (pricing.Rate, error) {
	if err := authz.Operator(c, "setting a rate"); err != nil {
		return pricing.Rate{}, err
	}
	nanos, err := pricing.ParseNanos(n.CreditsPerSecond)
	if err != nil {
		return pricing.Rate{}, sbx.Invalid("credits_per_second", "credits_per_second %q: want a decimal number with at most 9 decimals", n.CreditsPerSecond)
	}
	now := s.Clock.Now()
	rate := pricing.Rate{Provider: n.Provider, Resource: n.Resource, GPUType: n.GPUType, GPUShare: n.GPUShare, NanosPerSecond: nanos, EffectiveAt: now}
	if n.EffectiveAt != nil {
		rate.EffectiveAt = n.EffectiveAt.UTC()
	}
	if err := s.Store.AddRate(ctx, rate, now); err != nil {
		return pricing.Rate{}, err
	}
	return rate, nil
}

// TopUp adds credits (a positive decimal string) to the org ref (any org:
// its ID or name), with a note; the operator's.
func (s Service) TopUp(ctx context.Context, c sbx.Caller, ref, credits, note string) (Balance, error) {
	if err := authz.Operator(c, "topping up an org's credits"); err != nil {
		return Balance{}, err
	}
	micros, err := ParseCredits(credits)
	if err != nil {
		return Balance{}, err
	}
	org, err := s.Store.GetOrg(ctx, ref)
	if err != nil {
		return Balance{}, err
	}
	balance, err := s.Store.TopUp(ctx, org.ID, micros, note, s.Clock.Now())
	if err != nil {
		return Balance{}, err
	}
	return Balance{Org: org, Balance: balance}, nil
}

// ParseCredits reads an amount of credits given as a positive decimal
// string of at most 6 decimals (the credits field of a body), in
// micro-credits.
func ParseCredits(v string) (int64, error) {
	micros, err := pricing.ParseMicros(v)
	if err != nil || micros == 0 {
		return 0, sbx.Invalid("credits", "credits %q: want a positive decimal number with at most 6 decimals", v)
	}
	return micros, nil
}
