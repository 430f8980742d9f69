package httpapi

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/lifecycle"
)

// FuzzParseCreate feeds the create-body decoder arbitrary bytes: it must never
// panic, must answer every rejection as a 400 with a message, and what it
// accepts must satisfy the create contract.
func FuzzParseCreate(f *testing.F) {
	for _, seed := range []string{
		`{"templateID":"base"}`,
		`{"templateID":"code-interpreter","timeout":1800,"waitReady":true,"envVars":{"FOO":"bar"},"metadata":{"purpose":"demo"},"autoPause":true}`,
		`{"templateID":"base","cpu":0.5,"memoryMB":2048,"gpu":{"type":"h100","count":1,"fraction":25},"kind":"world"}`,
		`{"templateID":"base","gpu":{"type":"a10","count":2}}`,
		`{"templateID":"base","timeoutMs":1000}`,
		`{"templateID":"base","gpu":{"type":"h100","fraction":30}}`,
		`{"templateID":"base","timeout":-1,"cpu":1e309}`,
		`{"templateID":"base","envVars":{"":"x"},"metadata":{"a=b":"c"}}`,
		`{"TemplateID":"base"}`,
		`{"templateID":"base"} {}`,
		`[]`, `null`, ``, `{`, `"x"`, `{"templateID":null,"gpu":null}`,
		`{"image":{"uri":"ghcr.io/me/app:v2","username":"me","password":"t"},"projectID":"p"}`, `{"image":{"uri":""}}`,
		`{"image":{"uri":"a"},"templateID":"base"}`,
	} {
		f.Add([]byte(seed))
	}
	s := &Server{mgr: lifecycle.New(nil, nil, lifecycle.Config{}, sbx.SystemClock{}, slog.New(slog.DiscardHandler))}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, _, err := s.parseCreate(data)
		if err != nil {
			if sbx.ErrorCode(err) != sbx.EInvalid || sbx.ErrorMessage(err) == "" {
				t.Fatalf("rejection is not a 400 with a message: %v", err)
			}
			return
		}
		var p sbx.Problems
		if req.Image != nil {
			if req.Image.Ref == "" || req.TemplateID != "" {
				t.Fatalf("accepted image %+v with template %q", req.Image, req.TemplateID)
			}
		} else if lifecycle.CheckTemplate(&p, "templateID", req.TemplateID); p.Err() != nil {
			t.Fatalf("accepted template %q", req.TemplateID)
		}
		if req.Timeout < 0 || (req.Timeout > 0 && req.Timeout < time.Second) {
			t.Fatalf("accepted timeout %s", req.Timeout)
		}
		if req.Kind != "" && !req.Kind.Valid() {
			t.Fatalf("accepted kind %q", req.Kind)
		}
		r := req.Resources
		if r.MilliCPU < 1 || r.MilliCPU > 16000 || r.MemoryMB < 64 || r.MemoryMB > 65536 {
			t.Fatalf("accepted resources %+v", r)
		}
		if g := r.GPU; g != nil && (g.Count < 1 || g.Count > 8 || (g.Fraction != 100 && (g.Count != 1 || g.Fraction%25 != 0 || g.Fraction < 25))) {
			t.Fatalf("accepted gpu %+v", g)
		}
		for k := range req.Env {
			if sbx.EnvNameProblem(k) != "" {
				t.Fatalf("accepted env name %q", k)
			}
		}
		for k := range req.Metadata {
			if k == "" || strings.Contains(k, "=") {
				t.Fatalf("accepted metadata key %q", k)
			}
		}
	})
}
