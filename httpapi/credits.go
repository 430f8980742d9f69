package httpapi

import (
	"net/http"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/billing"
	"github.com/sbxdev/sbx/pricing"
)

// The wallet: an org's balance and where its credits went; and the
// operator's top-ups and prices. Package billing decides who may read and
// change them and sums the spending; these handlers decode and render.

func (s *Server) orgCredits(w http.ResponseWriter, r *http.Request) {
	limit, err := parseLimit(r.URL.Query())
	if err != nil {
		s.error(w, r, err)
		return
	}
	wallet, err := s.billing.Wallet(r.Context(), caller(r), r.PathValue("org"), limit)
	if err != nil {
		s.error(w, r, err)
		return
	}
	out := apiv1.Credits{Org: apiv1.Named{ID: wallet.Org.ID, Name: wallet.Org.Name}, Balance: credits(wallet.Balance), Settlements: []apiv1.Settlement{}}
	for _, st := range wallet.Settlements {
		out.Settlements = append(out.Settlements, apiv1.Settlement{
			ID: st.ID, SandboxID: st.SandboxID, State: string(st.State), From: st.From, To: st.To, Credits: credits(st.Paid),
			Resources: resources(billing.Resources{CPU: st.CPU, Memory: st.Memory, GPU: st.GPU, Storage: st.Storage}), BalanceAfter: credits(st.BalanceAfter),
		})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) orgSpending(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	sp, err := s.billing.Spending(r.Context(), caller(r), r.PathValue("org"), q.Get("from"), q.Get("to"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, renderSpending(sp))
}

// renderSpending writes billing's sums as the API's strings.
func renderSpending(sp billing.Spending) apiv1.Spending {
	out := apiv1.Spending{Org: apiv1.Named{ID: sp.Org.ID, Name: sp.Org.Name}, From: sp.From, To: sp.To,
		Total: credits(sp.Total), ByResource: resources(sp.ByResource),
		ByProject: []apiv1.ProjectSpend{}, ByKind: map[string]string{}, ByProvider: map[string]string{}, Sandboxes: []apiv1.SandboxSpend{}}
	for _, p := range sp.ByProject {
		out.ByProject = append(out.ByProject, apiv1.ProjectSpend{Project: apiv1.Named{ID: p.Project.ID, Name: p.Project.Name}, Credits: credits(p.Credits)})
	}
	for k, n := range sp.ByKind {
		out.ByKind[string(k)] = credits(n)
	}
	for k, n := range sp.ByProvider {
		out.ByProvider[k] = credits(n)
	}
	for _, x := range sp.Sandboxes {
		out.Sandboxes = append(out.Sandboxes, apiv1.SandboxSpend{SandboxID: x.ProviderSandboxID, ID: x.SandboxID,
			ProjectID: x.ProjectID, Kind: string(x.Kind), Provider: x.Provider, Credits: credits(x.Total),
			Resources: resources(billing.Resources{CPU: x.CPU, Memory: x.Memory, GPU: x.GPU, Storage: x.Storage})})
	}
	return out
}

func resources(r billing.Resources) apiv1.Resources {
	return apiv1.Resources{CPU: credits(r.CPU), Memory: credits(r.Memory), GPU: credits(r.GPU), PausedStorage: credits(r.Storage), Snapshots: credits(r.Snapshots), Volumes: credits(r.Volumes)}
}

func (s *Server) topUp(w http.ResponseWriter, r *http.Request) {
	if !s.operator(w, r) { // before the body is read; billing refuses it again
		return
	}
	var req apiv1.TopUpRequest
	if !s.decode(w, r, &req) {
		return
	}
	b, err := s.billing.TopUp(r.Context(), caller(r), r.PathValue("org"), req.Credits, req.Note)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apiv1.Balance{Org: apiv1.Named{ID: b.Org.ID, Name: b.Org.Name}, Balance: credits(b.Balance)})
}

func (s *Server) listRates(w http.ResponseWriter, r *http.Request) {
	table, err := s.billing.Rates(r.Context(), caller(r))
	if err != nil {
		s.error(w, r, err)
		return
	}
	out := apiv1.RateList{Items: []apiv1.Rate{}}
	for _, rt := range table {
		out.Items = append(out.Items, renderRate(rt))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) addRate(w http.ResponseWriter, r *http.Request) {
	if !s.operator(w, r) { // before the body is read; billing refuses it again
		return
	}
	var req apiv1.AddRateRequest
	if !s.decode(w, r, &req) {
		return
	}
	rate, err := s.billing.AddRate(r.Context(), caller(r), billing.NewRate{Provider: req.Provider, Resource: pricing.Resource(req.Resource), GPUType: req.GPUType,
		GPUShare: req.GPUShare, CreditsPerSecond: req.CreditsPerSecond, EffectiveAt: req.EffectiveAt})
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, renderRate(rate))
}

func renderRate(rt pricing.Rate) apiv1.Rate {
	return apiv1.Rate{Provider: rt.Provider, Resource: string(rt.Resource), GPUType: rt.GPUType, GPUShare: rt.GPUShare,
		CreditsPerSecond: pricing.FormatNanos(rt.NanosPerSecond), EffectiveAt: rt.EffectiveAt}
}
