package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newWebhook is the `sbx webhook` command group: the webhooks of the API
// key's org (or --org's), which get its events as signed POSTs (owners and
// admins).
func newWebhook(g *globals) *cobra.Command {
	var s scope
	cmd := group(&cobra.Command{Use: "webhook", Aliases: []string{"webhooks"},
		Short: "Register, list and remove the URLs that get the org's events, and see and redeliver their deliveries"},
		newWebhookAdd(g, &s), newWebhookList(g, &s), newWebhookRm(g, &s), newWebhookDeliveries(g, &s), newWebhookRedeliver(g, &s))
	s.orgFlag(cmd)
	return cmd
}

// newWebhookAdd is `sbx webhook add URL [--type T]… [--secret S]`.
func newWebhookAdd(g *globals, s *scope) *cobra.Command {
	var req apiv1.CreateWebhookRequest
	cmd := &cobra.Command{
		Use:   "add URL",
		Short: "Register a URL for the org's events (all, or --type's); prints its signing secret, once",
		Args:  args("URL"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			org, err := s.orgOf(ctx, c)
			if err != nil {
				return err
			}
			req.URL = args[0]
			created, err := c.AddWebhook(ctx, org, req)
			if err != nil {
				return err
			}
			return g.show(created, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "webhook %s for %s (%s)\nsecret %s\n(the secret is shown only now: keep it to verify Sbx-Signature)\n",
					created.Webhook.ID, created.Webhook.URL, typesText(created.Webhook.Types), created.Secret)
				return err
			})
		}),
	}
	cmd.Flags().StringArrayVar(&req.Types, "type", nil, "an event type, or a prefix such as sandbox.* (repeatable; none: every type)")
	cmd.Flags().StringVar(&req.Secret, "secret", "", "the signing secret, 16 to 256 bytes (default: one is made)")
	return cmd
}

// typesText is a webhook's types in a line.
func typesText(types []string) string {
	if len(types) == 0 {
		return "every event"
	}
	return strings.Join(types, ", ")
}

// newWebhookList is `sbx webhook list`.
func newWebhookList(g *globals, s *scope) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the org's webhooks (never their secrets)",
		Args:  args(),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, _ []string) error {
			org, err := s.orgOf(ctx, c)
			if err != nil {
				return err
			}
			l, err := c.Webhooks(ctx, org)
			if err != nil {
				return err
			}
			return g.show(l, func(w io.Writer) error {
				rows := make([][]string, 0, len(l.Items))
				for _, wh := range l.Items {
					rows = append(rows, []string{wh.ID, wh.URL, typesText(wh.Types), strconv.FormatInt(wh.Cursor, 10), stamp(wh.CreatedAt)})
				}
				return table(w, []string{"ID", "URL", "TYPES", "CURSOR", "CREATED"}, rows)
			})
		}),
	}
}

// newWebhookRm is `sbx webhook rm ID`.
func newWebhookRm(g *globals, s *scope) *cobra.Command {
	return &cobra.Command{
		Use:     "rm ID",
		Aliases: []string{"remove", "delete"},
		Short:   "Remove a webhook and its deliveries",
		Args:    args("ID"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			org, err := s.orgOf(ctx, c)
			if err != nil {
				return err
			}
			wh, err := c.DeleteWebhook(ctx, org, args[0])
			if err != nil {
				return err
			}
			return g.show(wh, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "removed webhook %s (%s)\n", wh.ID, wh.URL)
				return err
			})
		}),
	}
}

// newWebhookDeliveries is `sbx webhook deliveries ID [--state S]`.
func newWebhookDeliveries(g *globals, s *scope) *cobra.Command {
	var state string
	cmd := &cobra.Command{
		Use:   "deliveries ID",
		Short: "List a webhook's deliveries, newest event first",
		Args:  args("ID"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			org, err := s.orgOf(ctx, c)
			if err != nil {
				return err
			}
			l, err := c.WebhookDeliveries(ctx, org, args[0], state)
			if err != nil {
				return err
			}
			return g.show(l, func(w io.Writer) error {
				rows := make([][]string, 0, len(l.Items))
				for _, d := range l.Items {
					status := "-"
					if d.LastStatus != 0 {
						status = strconv.Itoa(d.LastStatus)
					}
					rows = append(rows, []string{d.ID, strconv.FormatInt(d.EventID, 10), d.EventType, d.State, strconv.Itoa(d.Attempts), status,
						stamp(d.NextAttemptAt), orDash(d.LastError)})
				}
				return table(w, []string{"ID", "EVENT", "TYPE", "STATE", "ATTEMPTS", "STATUS", "NEXT", "ERROR"}, rows)
			})
		}),
	}
	cmd.Flags().StringVar(&state, "state", "", "only deliveries in this state: queued, in_progress, succeeded or dead_letter")
	return cmd
}

// newWebhookRedeliver is `sbx webhook redeliver ID DELIVERY`.
func newWebhookRedeliver(g *globals, s *scope) *cobra.Command {
	return &cobra.Command{
		Use:   "redeliver ID DELIVERY",
		Short: "Queue a delivery again, due now, with a full set of attempts",
		Args:  args("ID", "DELIVERY"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			org, err := s.orgOf(ctx, c)
			if err != nil {
				return err
			}
			d, err := c.Redeliver(ctx, org, args[0], args[1])
			if err != nil {
				return err
			}
			return g.show(d, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "delivery %s of event %d is %s\n", d.ID, d.EventID, d.State)
				return err
			})
		}),
	}
}
