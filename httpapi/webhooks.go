package httpapi

import (
	"net/http"
	"strconv"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/webhooks"
)

// An org's webhooks, through the webhooks service (owners and admins
// only): register (the secret answered once), list (never the secrets),
// remove, and their deliveries, read and redelivered.

func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request) {
	if !s.inOrg(w, r) {
		return
	}
	var body apiv1.CreateWebhookRequest
	if !s.decode(w, r, &body) {
		return
	}
	wh, secret, err := s.webhooks.Add(r.Context(), caller(r), webhooks.Spec{URL: body.URL, Types: body.Types, Secret: body.Secret})
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, apiv1.CreatedWebhook{Webhook: renderWebhook(wh), Secret: secret})
}

func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request) {
	if !s.inOrg(w, r) {
		return
	}
	list, err := s.webhooks.List(r.Context(), caller(r))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apiv1.WebhookList{Items: renderAll(list, renderWebhook)})
}

func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request) {
	if !s.inOrg(w, r) {
		return
	}
	wh, err := s.webhooks.Remove(r.Context(), caller(r), r.PathValue("webhook"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, renderWebhook(wh))
}

func (s *Server) listDeliveries(w http.ResponseWriter, r *http.Request) {
	if !s.inOrg(w, r) {
		return
	}
	limit := 0
	if l := r.URL.Query().Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil {
			s.error(w, r, sbx.Invalid("limit", "limit %q is not a number from 1 to 1000", l))
			return
		}
		limit = n
	}
	state := sbx.DeliveryState(r.URL.Query().Get("state"))
	list, err := s.webhooks.Deliveries(r.Context(), caller(r), r.PathValue("webhook"), state, limit)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apiv1.WebhookDeliveryList{Items: renderAll(list, renderDelivery)})
}

func (s *Server) redeliver(w http.ResponseWriter, r *http.Request) {
	if !s.inOrg(w, r) {
		return
	}
	d, err := s.webhooks.Redeliver(r.Context(), caller(r), r.PathValue("webhook"), r.PathValue("delivery"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, renderDelivery(d))
}

func renderWebhook(wh sbx.Webhook) apiv1.Webhook {
	types := wh.Types
	if types == nil {
		types = []string{}
	}
	return apiv1.Webhook{ID: wh.ID, URL: wh.URL, Types: types, CreatedAt: wh.CreatedAt, Cursor: wh.Cursor}
}

func renderDelivery(d sbx.WebhookDelivery) apiv1.WebhookDelivery {
	return apiv1.WebhookDelivery{ID: d.ID, WebhookID: d.WebhookID, EventID: d.Seq, EventType: d.EventType, State: string(d.State),
		Attempts: d.Attempts, NextAttemptAt: d.NextAttemptAt, LastStatus: d.LastStatus, LastError: d.LastError,
		CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt}
}
