package lifecycle_test

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/lifecycle"
)

// What a caller asks is checked and completed in one place for every
// surface: the limits bound it, the defaults fill what it leaves out, and
// every problem is reported under its field.
func TestAsksAreCheckedAndCompleted(t *testing.T) {
	m := lifecycle.New(nil, nil, lifecycle.Config{Limits: lifecycle.Limits{MaxCPU: 4, DefaultDiskMB: 2048, MaxDiskMB: 4096}},
		sbx.SystemClock{}, slog.New(slog.DiscardHandler))
	if l := m.Limits(); l.MaxMemoryMB != 65536 || l.DefaultCPU != 2 || l.DefaultMemoryMB != 512 || l.MaxDiskMB != 4096 {
		t.Fatalf("limits %+v", l)
	}
	req, err := m.Request(lifecycle.Ask{TemplateID: "base"})
	if err != nil || req.Resources != (sbx.Resources{MilliCPU: 2000, MemoryMB: 512, DiskMB: 2048}) {
		t.Fatalf("defaults: %+v %v", req, err)
	}
	cpu, mem, disk, timeout := 8.0, int64(32), int64(8192), int64(0)
	_, err = m.Request(lifecycle.Ask{TemplateID: "Base!", Kind: "pet", Timeout: &timeout, CPU: &cpu, MemoryMB: &mem, DiskMB: &disk,
		GPU: &sbx.GPURequest{Type: "h100", Count: 2, Fraction: 50}, Env: map[string]string{"1X": "y"}, Metadata: map[string]string{"sbx.x": "y"}})
	var e *sbx.Error
	if !errors.As(err, &e) {
		t.Fatalf("not an sbx.Error: %v", err)
	}
	var fields []string
	for _, f := range e.Fields {
		fields = append(fields, f.Field)
	}
	if got := strings.Join(fields, " "); got != "templateID timeout kind envVars.1X metadata.sbx.x cpu memoryMB diskMB gpu.fraction" {
		t.Fatalf("problems under %q: %v", got, err)
	}
	if r := m.StartResources(sbx.Resources{MemoryMB: 1024}); r != (sbx.Resources{MilliCPU: 2000, MemoryMB: 1024, DiskMB: 2048}) {
		t.Fatalf("a runtime's start resources: %+v", r)
	}
}

// An image is asked for in place of a template, never with one, with a URI
// and with a username and password together or neither.
func TestImageAsks(t *testing.T) {
	m := lifecycle.New(nil, nil, lifecycle.Config{}, sbx.SystemClock{}, slog.New(slog.DiscardHandler))
	img := &sbx.ImageSpec{Ref: "ghcr.io/me/app:v2", Username: "me", Password: "token"}
	if req, err := m.Request(lifecycle.Ask{Image: img}); err != nil || req.Image != img || req.TemplateID != "" {
		t.Fatalf("an image: %+v %v", req, err)
	}
	for _, c := range []struct {
		ask   lifecycle.Ask
		field string
	}{
		{lifecycle.Ask{}, "templateID"},
		{lifecycle.Ask{TemplateID: "base", Image: img}, "image"},
		{lifecycle.Ask{Image: &sbx.ImageSpec{}}, "image.uri"},
		{lifecycle.Ask{Image: &sbx.ImageSpec{Ref: strings.Repeat("a", 513)}}, "image.uri"},
		{lifecycle.Ask{Image: &sbx.ImageSpec{Ref: "app", Username: "me"}}, "image.password"},
		{lifecycle.Ask{Image: &sbx.ImageSpec{Ref: "app", Password: "token"}}, "image.password"},
	} {
		_, err := m.Request(c.ask)
		var e *sbx.Error
		if !errors.As(err, &e) || len(e.Fields) != 1 || e.Fields[0].Field != c.field {
			t.Errorf("%+v: %v, want a problem with %s", c.ask, err, c.field)
		}
	}
}
