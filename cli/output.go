package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

// usageError is a command used wrongly: Run prints it and exits 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// exitCode is the exit status for an error Run prints: 2 for usage errors, else 1.
func exitCode(err error) int {
	var u *usageError
	if errors.As(err, &u) {
		return 2
	}
	return 1
}

// args checks that a command got exactly the positional arguments its Use
// line names, as a usage error.
func args(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, got []string) error {
		if len(got) == len(names) {
			return nil
		}
		want := "no arguments"
		if len(names) > 0 {
			want = strings.Join(names, " ")
		}
		return usagef("%s takes %s, got %d argument(s)\nusage: %s", cmd.CommandPath(), want, len(got), cmd.UseLine())
	}
}

// flagUsage turns a flag parsing error into a usage error.
func flagUsage(cmd *cobra.Command, err error) error {
	return usagef("%v\nusage: %s", err, cmd.UseLine())
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// table writes rows under a header, in aligned columns.
func table(w io.Writer, header []string, rows [][]string) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	for _, r := range append([][]string{header}, rows...) {
		// Every cell ends in a tab, so that a row whose last cells are
		// empty stays in its columns; the padding that leaves at the end of
		// a line is trimmed below.
		fmt.Fprintln(tw, strings.Join(r, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for line := range strings.Lines(buf.String()) { // each ends in "\n": Fprintln
		if _, err := io.WriteString(w, strings.TrimRight(line, " \n")+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// field is one line of a detail view.
type field struct{ name, value string }

// fields writes "name: value" lines with aligned values, skipping empty ones.
func fields(w io.Writer, fs []field) error {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	for _, f := range fs {
		if f.value != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", f.name, f.value)
		}
	}
	return tw.Flush()
}

// stamp renders a time as RFC 3339 UTC to the second.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// stampPtr is stamp for an optional time; "" when absent.
func stampPtr(t *time.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return stamp(*t)
}

// orDash stands "-" in for an empty table cell.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// secondsText renders a count of seconds as a duration, "1h0m0s (3600s)".
func secondsText(s int64) string {
	if s == 0 {
		return ""
	}
	return fmt.Sprintf("%s (%ds)", time.Duration(s)*time.Second, s)
}
