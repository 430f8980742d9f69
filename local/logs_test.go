package local

import (
	"context"
	"os"
	"testing"

	"github.com/sbxdev/sbx"
)

// Following a sandbox's log reads only what it grew by: each read goes on
// from the cursor the last one answered, keeps a line's date from the
// provider line before it, and leaves a line without its newline for the
// next read (the whole log, Logs, answers it).
func TestLogsFromGoOnFromTheirCursor(t *testing.T) {
	p := newProvider(t)
	id := "tlogfollow"
	if err := os.MkdirAll(p.dir(id), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p.outputFile(id), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sbx.IDHandle(id)
	ctx := context.Background()
	f.WriteString(notePrefix + "2026-11-24T10:00:00Z] starting\nhello\npart")
	lines, cur, err := p.LogsFrom(ctx, h, sbx.LogCursor{})
	if err != nil || len(lines) != 2 || lines[0].Source != Name || lines[1].Line != "hello" || lines[1].At != lines[0].At {
		t.Fatalf("first read: %+v %v", lines, err)
	}
	if all, _ := p.Logs(ctx, h); len(all) != 3 || all[2].Line != "part" {
		t.Fatalf("the whole log: %+v", all)
	}
	f.WriteString("ial\nworld\n")
	lines, cur2, err := p.LogsFrom(ctx, h, cur)
	if err != nil || len(lines) != 2 || lines[0].Line != "partial" || lines[1].Line != "world" || !lines[1].At.Equal(cur.At) {
		t.Fatalf("second read: %+v %v", lines, err)
	}
	if lines, cur3, err := p.LogsFrom(ctx, h, cur2); err != nil || len(lines) != 0 || cur3 != cur2 {
		t.Fatalf("nothing new: %+v %+v %v", lines, cur3, err)
	}
	// A log started again (a smaller file) is read from its start.
	os.Remove(p.outputFile(id))
	os.WriteFile(p.outputFile(id), []byte("again\n"), 0o600)
	if lines, _, err := p.LogsFrom(ctx, h, cur2); err != nil || len(lines) != 1 || lines[0].Line != "again" {
		t.Fatalf("a new log: %+v %v", lines, err)
	}
}
