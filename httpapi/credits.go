package httpapi

import (
	"net/http"
	"sort"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/authz"
	"github.com/sbxdev/sbx/pricing"
)

// The wallet: an org's balance and where its credits went; and the
// operator's top-ups and prices.

// defaultSpendingRange is the time range of a breakdown when not given.
const defaultSpendingRange = 30 * 24 * time.Hour

func (s *Server) orgCredits(w http.ResponseWriter, r *http.Request) {
	if !s.inOrg(w, r) || !s.wallet(w, r) {
		return
	}
	q := r.URL.Query()
	limit, err := parseLimit(q)
	if err != nil {
		s.error(w, r, err)
		return
	}
	c := caller(r)
	balance, err := s.store.Balance(r.Context(), c.Org.ID)
	if err != nil {
		s.error(w, r, err)
		return
	}
	list, err := s.store.Settlements(r.Context(), c.Org.ID, limit)
	if err != nil {
		s.error(w, r, err)
		return
	}
	out := apiv1.Credits{Org: apiv1.Named{ID: c.Org.ID, Name: c.Org.Name}, Balance: credits(balance), Settlements: []apiv1.Settlement{}}
	for _, st := range list {
		out.Settlements = append(out.Settlements, apiv1.Settlement{
			ID: st.ID, SandboxID: st.SandboxID, State: string(st.State), From: st.From, To: st.To, Credits: credits(st.Paid),
			Resources: resources(st.CPU, st.Memory, st.GPU, st.Storage), BalanceAfter: credits(st.BalanceAfter),
		})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) orgSpending(w http.ResponseWriter, r *http.Request) {
	if !s.inOrg(w, r) || !s.wallet(w, r) {
		return
	}
	from, to, err := s.timeRange(r)
	if err != nil {
		s.error(w, r, err)
		return
	}
	c := caller(r)
	spend, err := s.store.Spending(r.Context(), c.Org.ID, from, to)
	if err != nil {
		s.error(w, r, err)
		return
	}
	projects, err := s.store.Projects(r.Context(), c.Org.ID)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, spending(c.Org, from, to, spend, projects))
}

// timeRange reads from and to (RFC 3339): by default the last 30 days.
func (s *Server) timeRange(r *http.Request) (time.Time, time.Time, error) {
	q := r.URL.Query()
	to, err := timeParam(q.Get("to"), "to", s.clock.Now())
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	from, err := timeParam(q.Get("from"), "from", to.Add(-defaultSpendingRange))
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	if !from.Before(to) {
		return time.Time{}, time.Time{}, sbx.Invalid("from", "from (%s) must be before to (%s)", from.Format(time.RFC3339), to.Format(time.RFC3339))
	}
	return from, to, nil
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

// spending sums the per-sandbox rows into every breakdown.
func spending(org sbx.Org, from, to time.Time, spend []sbx.Spend, projects []sbx.Project) apiv1.Spending {
	out := apiv1.Spending{Org: apiv1.Named{ID: org.ID, Name: org.Name}, From: from, To: to,
		ByProject: []apiv1.ProjectSpend{}, ByKind: map[string]string{}, ByProvider: map[string]string{}, Sandboxes: []apiv1.SandboxSpend{}}
	var total, cpu, mem, gpu, storage int64
	byProject, byKind, byProvider := map[string]int64{}, map[string]int64{}, map[string]int64{}
	for _, sp := range spend {
		total, cpu, mem, gpu, storage = total+sp.Total, cpu+sp.CPU, mem+sp.Memory, gpu+sp.GPU, storage+sp.Storage
		byProject[sp.ProjectID] += sp.Total
		byKind[string(sp.Kind)] += sp.Total
		byProvider[sp.Provider] += sp.Total
		out.Sandboxes = append(out.Sandboxes, apiv1.SandboxSpend{SandboxID: sp.ProviderSandboxID, ID: sp.SandboxID,
			ProjectID: sp.ProjectID, Kind: string(sp.Kind), Provider: sp.Provider, Credits: credits(sp.Total),
			Resources: resources(sp.CPU, sp.Memory, sp.GPU, sp.Storage)})
	}
	out.Total, out.ByResource = credits(total), resources(cpu, mem, gpu, storage)
	for _, p := range projects {
		if n, ok := byProject[p.ID]; ok {
			out.ByProject = append(out.ByProject, apiv1.ProjectSpend{Project: apiv1.Named{ID: p.ID, Name: p.Name}, Credits: credits(n)})
		}
	}
	sort.Slice(out.ByProject, func(i, j int) bool { return out.ByProject[i].Project.Name < out.ByProject[j].Project.Name })
	for k, n := range byKind {
		out.ByKind[k] = credits(n)
	}
	for k, n := range byProvider {
		out.ByProvider[k] = credits(n)
	}
	return out
}

// parseCredits reads the credits field of a body: a positive decimal
// string, in micro-credits.
func parseCredits(v string) (int64, error) {
	micros, err := pricing.ParseMicros(v)
	if err != nil || micros == 0 {
		return 0, sbx.Invalid("credits", "credits %q: want a positive decimal number with at most 6 decimals", v)
	}
	return micros, nil
}

func resources(cpu, mem, gpu, storage int64) apiv1.Resources {
	return apiv1.Resources{CPU: credits(cpu), Memory: credits(mem), GPU: credits(gpu), PausedStorage: credits(storage)}
}

func (s *Server) topUp(w http.ResponseWriter, r *http.Request) {
	if !s.operator(w, r) {
		return
	}
	var req apiv1.TopUpRequest
	if !s.decode(w, r, &req) {
		return
	}
	micros, err := parseCredits(req.Credits)
	if err != nil {
		s.error(w, r, err)
		return
	}
	org, err := s.store.GetOrg(r.Context(), r.PathValue("org"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	balance, err := s.store.TopUp(r.Context(), org.ID, micros, req.Note, s.clock.Now())
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apiv1.Balance{Org: apiv1.Named{ID: org.ID, Name: org.Name}, Balance: credits(balance)})
}

func (s *Server) listRates(w http.ResponseWriter, r *http.Request) {
	table, err := s.store.Rates(r.Context())
	if err != nil {
		s.error(w, r, err)
		return
	}
	out := apiv1.RateList{Items: []apiv1.Rate{}}
	for _, rt := range table {
		out.Items = append(out.Items, apiv1.Rate{Resource: string(rt.Resource), GPUType: rt.GPUType, GPUShare: rt.GPUShare,
			CreditsPerSecond: pricing.FormatNanos(rt.NanosPerSecond), EffectiveAt: rt.EffectiveAt})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) addRate(w http.ResponseWriter, r *http.Request) {
	if !s.operator(w, r) {
		return
	}
	var req apiv1.AddRateRequest
	if !s.decode(w, r, &req) {
		return
	}
	nanos, err := pricing.ParseNanos(req.CreditsPerSecond)
	if err != nil {
		s.error(w, r, sbx.Invalid("credits_per_second", "credits_per_second %q: want a decimal number with at most 9 decimals", req.CreditsPerSecond))
		return
	}
	now := s.clock.Now()
	rate := pricing.Rate{Resource: pricing.Resource(req.Resource), GPUType: req.GPUType, GPUShare: req.GPUShare, NanosPerSecond: nanos, EffectiveAt: now}
	if req.EffectiveAt != nil {
		rate.EffectiveAt = req.EffectiveAt.UTC()
	}
	if err := s.store.AddRate(r.Context(), rate, now); err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, apiv1.Rate{Resource: req.Resource, GPUType: req.GPUType, GPUShare: req.GPUShare,
		CreditsPerSecond: pricing.FormatNanos(nanos), EffectiveAt: rate.EffectiveAt})
}

// wallet answers a 403 unless the caller may read the org's credits: its
// owners and admins.
func (s *Server) wallet(w http.ResponseWriter, r *http.Request) bool {
	if err := authz.Need(caller(r), sbx.RoleAdmin, "reading the org's credits"); err != nil {
		s.error(w, r, err)
		return false
	}
	return true
}
