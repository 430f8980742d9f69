package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newSummary is `sbx summary`: the observability summary.
func newSummary(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "summary",
		Short: "Print the observability summary: usage per project, quotas against limits, disk, providers, engines, endpoints, next actions",
		Args:  args(),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, _ []string) error {
			s, err := c.Summary(ctx)
			if err != nil {
				return err
			}
			return g.show(s, func(w io.Writer) error {
				err := fields(w, []field{{"Org", s.Org.Name + " (" + s.Org.ID + ")"}, {"Plan", orDash(s.Plan.Name)}, {"Generated", stamp(s.GeneratedAt)}})
				if err != nil {
					return err
				}
				section := func(title string, header []string, rows [][]string) error {
					if len(rows) == 0 {
						return nil
					}
					if _, err := fmt.Fprintf(w, "\n%s:\n", title); err != nil {
						return err
					}
					return table(w, header, rows)
				}
				var rows [][]string
				for _, q := range s.Quotas {
					rows = append(rows, []string{q.Name, strconv.FormatFloat(q.Used, 'f', -1, 64), strconv.FormatFloat(q.Limit, 'f', -1, 64), okText(q.OK), q.Detail})
				}
				if err := section("Quotas", []string{"QUOTA", "USED", "LIMIT", "OK", "DETAIL"}, rows); err != nil {
					return err
				}
				if d := s.Disk; d != nil {
					rows = [][]string{{strconv.FormatInt(d.TotalMB, 10), strconv.FormatInt(d.FreeMB, 10), strconv.FormatInt(d.ReservedBySandboxes, 10),
						strconv.FormatInt(d.ReserveMB, 10), strconv.FormatInt(d.AvailableMB, 10)}}
					if err := section("Disk (MiB)", []string{"TOTAL", "FREE", "SANDBOXES MAY WRITE", "RESERVE", "AVAILABLE"}, rows); err != nil {
						return err
					}
				}
				rows = nil
				for _, p := range s.Projects {
					rows = append(rows, usageRow(p.Project.Name, p.Usage))
				}
				if err := section("Projects", []string{"PROJECT", "SANDBOXES", "STARTING", "RUNNING", "PAUSED", "KILLED", "FAILED",
					"RUNNING VCPU", "RUNNING MEMORY MB", "LIFETIME", "BILLED CREDITS"}, rows); err != nil {
					return err
				}
				rows = nil
				for _, p := range s.Providers {
					name := p.Name
					if p.Default {
						name += " (default)"
					}
					rows = append(rows, []string{name, okText(p.Available), p.Detail})
				}
				if err := section("Providers", []string{"PROVIDER", "AVAILABLE", "DETAIL"}, rows); err != nil {
					return err
				}
				rows = nil
				for _, e := range s.Engines {
					rows = append(rows, []string{e.Name, okText(e.Available), orDash(e.Version), e.Detail})
				}
				if err := section("Engines", []string{"ENGINE", "AVAILABLE", "VERSION", "DETAIL"}, rows); err != nil {
					return err
				}
				rows = nil
				for _, e := range s.Endpoints {
					rows = append(rows, []string{e.Name, e.URL, okText(e.Available), e.Detail})
				}
				if err := section("Endpoints", []string{"ENDPOINT", "URL", "AVAILABLE", "DETAIL"}, rows); err != nil {
					return err
				}
				if len(s.NextActions) > 0 {
					fmt.Fprintln(w, "\nNext actions:")
					for _, a := range s.NextActions {
						if _, err := fmt.Fprintf(w, "  - %s\n", a); err != nil {
							return err
						}
					}
				}
				return nil
			})
		}),
	}
}

// okText renders a check's outcome.
func okText(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}
