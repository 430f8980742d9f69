package cli

import (
	"bytes"
	"strings"
	"testing"
)

// A row whose last cells are empty keeps the others in their columns, and
// no line ends in spaces.
func TestTableStaysAligned(t *testing.T) {
	var buf bytes.Buffer
	err := table(&buf, []string{"  AT", "STEP", "DETAIL"}, [][]string{
		{"  2026-11-24T10:00:00Z", "creating", "provider local, template base"},
		{"  2026-11-24T10:00:01Z", "ready", ""},
		{"  2026-11-24T10:00:02Z", "capability_install_failed", "exit 1"},
		{"  2026-11-24T10:00:03Z", "paused", "by user"},
	})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	col := strings.Index(lines[0], "DETAIL")
	for _, l := range lines {
		if strings.HasSuffix(l, " ") {
			t.Errorf("a line ends in spaces: %q", l)
		}
	}
	for _, l := range []string{lines[1], lines[3], lines[4]} {
		if len(l) <= col || l[col-1] != ' ' || l[col] == ' ' {
			t.Errorf("the detail column starts at %d in the header, not in %q\n%s", col, l, buf.String())
		}
	}
	if lines[2] != "  2026-11-24T10:00:01Z  ready" {
		t.Errorf("the row without a detail: %q", lines[2])
	}
}
