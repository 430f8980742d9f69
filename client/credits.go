package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/sbxdev/sbx/apiv1"
)

// The wallet: an org's credits and where they went (an org-wide key), and
// the operator's top-ups and prices. org is the org's ID or name.

// Credits returns the org's balance and its newest settlements, at most
// limit (the server's default when zero).
func (c *Client) Credits(ctx context.Context, org string, limit int) (*apiv1.Credits, error) {
	var q url.Values
	if limit > 0 {
		q = url.Values{"limit": {strconv.Itoa(limit)}}
	}
	return call[apiv1.Credits](ctx, c, http.MethodGet, orgPath(org, "credits"), q, nil)
}

// Spending breaks down what the org's settlements ending in (from, to]
// paid; zero times take the server's defaults (the last 30 days).
func (c *Client) Spending(ctx context.Context, org string, from, to time.Time) (*apiv1.Spending, error) {
	q := url.Values{}
	if !from.IsZero() {
		q.Set("from", from.UTC().Format(time.RFC3339))
	}
	if !to.IsZero() {
		q.Set("to", to.UTC().Format(time.RFC3339))
	}
	return call[apiv1.Spending](ctx, c, http.MethodGet, orgPath(org, "credits", "spending"), q, nil)
}

// TopUp adds credits (a decimal string) to an org's balance.
func (c *Client) TopUp(ctx context.Context, org, credits, note string) (*apiv1.Balance, error) {
	return call[apiv1.Balance](ctx, c, http.MethodPost, apiPath("admin", "orgs", org, "credits"), nil,
		apiv1.TopUpRequest{Credits: credits, Note: note})
}

// Rates returns the price table.
func (c *Client) Rates(ctx context.Context) (*apiv1.RateList, error) {
	return call[apiv1.RateList](ctx, c, http.MethodGet, apiPath("rates"), nil, nil)
}

// AddRate sets a price from its effective time on.
func (c *Client) AddRate(ctx context.Context, req apiv1.AddRateRequest) (*apiv1.Rate, error) {
	return call[apiv1.Rate](ctx, c, http.MethodPost, apiPath("admin", "rates"), nil, req)
}
