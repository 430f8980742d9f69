package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/e2b"
)

// The e2b contender is the e2b provider, set up as serve sets it up over
// the E2B API at Config.E2B (an instance name of the run's own), against
// direct calls of that API in the same run: a create (POST /sandboxes)
// timed until the sandbox's envd answers /health, against the provider's
// Create timed until its bridge answers /ready (which asks envd's
// /health), which is what a create with waitReady costs; and pause and
// resume against POST pause and connect. The difference is sbx's own
// cost: the provider's admission, its metadata, the bridge.

// E2BConfig is the E2B API the e2b contender runs on.
type E2BConfig struct {
	APIURL     string // "": the e2b contender is skipped
	APIKey     string
	Domain     string
	SandboxURL string
	Template   string // default Config.Template
}

// E2BProviderResult is the e2b provider against direct calls of the same API,
// measured in the same run.
type E2BProviderResult struct {
	API     string `json:"api"`
	Skipped string `json:"skipped,omitempty"`

	Create       Stat  `json:"create"` // Create to the bridge answering /ready
	Direct       Stat  `json:"direct"` // POST /sandboxes to envd answering /health
	Pause        *Stat `json:"pause,omitempty"`
	Resume       *Stat `json:"resume,omitempty"`
	DirectPause  *Stat `json:"direct_pause,omitempty"`
	DirectResume *Stat `json:"direct_resume,omitempty"`
}

// e2bLab is the e2b contender of a run and its baseline's client.
type e2bLab struct {
	cfg  E2BConfig
	name string
	p    *e2b.Provider
	http *http.Client
}

// e2bPhase measures the e2b provider, when an API is configured.
func (l *lab) e2bPhase(ctx context.Context, r *Report) error {
	r.E2BProvider = &E2BProviderResult{API: l.cfg.E2B.APIURL}
	if l.cfg.E2B.APIURL == "" {
		r.E2BProvider.Skipped = "no --e2b-api-url"
		return nil
	}
	e := &e2bLab{cfg: l.cfg.E2B, name: l.cfg.Name + "-" + l.tag, http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}}}
	if e.cfg.Template == "" {
		e.cfg.Template = l.cfg.Template
	}
	var err error
	if e.p, err = e2b.New(e2b.Config{APIURL: strings.TrimRight(e.cfg.APIURL, "/"), APIKey: e.cfg.APIKey, Domain: e.cfg.Domain,
		SandboxURL: e.cfg.SandboxURL, Name: e.name}); err != nil {
		return err
	}
	defer e.cleanup()
	var create, direct, pause, resume, dpause, dresume []time.Duration
	steps := []func() error{
		func() error { // the provider: create to ready, then pause and resume
			h, took, err := e.create(ctx)
			if err != nil {
				return fmt.Errorf("sbx e2b create: %w", err)
			}
			create = append(create, took)
			defer e.p.Kill(context.WithoutCancel(ctx), h)
			start := time.Now()
			if err := e.p.Pause(ctx, h); err != nil {
				return err
			}
			pause = append(pause, time.Since(start))
			start = time.Now()
			if _, err := e.p.Resume(ctx, h); err != nil {
				return err
			}
			resume = append(resume, time.Since(start))
			return nil
		},
		func() error { // the API, directly
			id, took, err := e.directCreate(ctx)
			if id != "" {
				defer e.call(context.WithoutCancel(ctx), "DELETE", "/sandboxes/"+id, nil, nil)
			}
			if err != nil {
				return fmt.Errorf("E2B API create: %w", err)
			}
			direct = append(direct, took)
			start := time.Now()
			if err := e.call(ctx, "POST", "/sandboxes/"+id+"/pause", nil, nil); err != nil {
				return err
			}
			dpause = append(dpause, time.Since(start))
			start = time.Now()
			if err := e.call(ctx, "POST", "/sandboxes/"+id+"/connect", map[string]any{"timeout": 600}, nil); err != nil {
				return err
			}
			dresume = append(dresume, time.Since(start))
			return nil
		},
	}
	l.cfg.progress("e2b: warming up against %s", e.cfg.APIURL)
	for _, s := range steps {
		if err := s(); err != nil {
			return err
		}
	}
	create, direct, pause, resume, dpause, dresume = nil, nil, nil, nil, nil, nil
	for i := range l.cfg.N {
		if err := inTurn(i, len(steps), func(k int) error { return steps[k]() }); err != nil {
			return err
		}
		l.cfg.progress("e2b %d/%d: sbx e2b create %s pause %s resume %s, E2B API create %s pause %s connect %s", i+1, l.cfg.N,
			round(create[i]), round(pause[i]), round(resume[i]), round(direct[i]), round(dpause[i]), round(dresume[i]))
	}
	r.E2BProvider.Create, r.E2BProvider.Direct = NewStat(create), NewStat(direct)
	for _, s := range []struct {
		to  **Stat
		got []time.Duration
	}{{&r.E2BProvider.Pause, pause}, {&r.E2BProvider.Resume, resume}, {&r.E2BProvider.DirectPause, dpause}, {&r.E2BProvider.DirectResume, dresume}} {
		st := NewStat(s.got)
		*s.to = &st
	}
	return nil
}

// create makes a sandbox through the provider and times it to its
// bridge's /ready.
func (e *e2bLab) create(ctx context.Context) (sbx.Handle, time.Duration, error) {
	spec := sbx.Spec{SandboxID: uuid.NewString(), TemplateID: e.cfg.Template, Kind: sbx.KindTask, AccessToken: rand.Text() + rand.Text()}
	start := time.Now()
	in, err := e.p.Create(ctx, spec)
	if err != nil {
		return in.Handle, 0, err
	}
	addr, err := e.p.AgentAddr(ctx, in.Handle)
	if err == nil {
		err = ready(ctx, addr, spec.AccessToken)
	}
	return in.Handle, time.Since(start), err
}

// directCreate is the baseline: POST /sandboxes as an E2B SDK sends it,
// then envd's /health until it answers, as the SDK reaches envd.
func (e *e2bLab) directCreate(ctx context.Context) (string, time.Duration, error) {
	var sb struct {
		SandboxID       string  `json:"sandboxID"`
		EnvdAccessToken string  `json:"envdAccessToken"`
		Domain          *string `json:"domain"`
	}
	start := time.Now()
	err := e.call(ctx, "POST", "/sandboxes", map[string]any{"templateID": e.cfg.Template, "timeout": 600, "secure": true,
		"metadata": map[string]string{"sbx_bench": e.name}}, &sb)
	if err != nil {
		return "", 0, err
	}
	url := e.cfg.SandboxURL
	if url == "" {
		domain := e.cfg.Domain
		if sb.Domain != nil && *sb.Domain != "" {
			domain = *sb.Domain
		}
		url = "https://49983-" + sb.SandboxID + "." + domain
	}
	for {
		req, _ := http.NewRequestWithContext(ctx, "GET", strings.TrimRight(url, "/")+"/health", nil)
		req.Header.Set("E2b-Sandbox-Id", sb.SandboxID)
		req.Header.Set("E2b-Sandbox-Port", "49983")
		req.Header.Set("X-Access-Token", sb.EnvdAccessToken)
		resp, err := e.http.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				return sb.SandboxID, time.Since(start), nil
			}
		}
		if time.Since(start) > time.Minute {
			return sb.SandboxID, 0, fmt.Errorf("envd of %s did not answer within a minute (%v)", sb.SandboxID, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// call makes one call of the API, decoding a 2xx answer into out.
func (e *e2bLab) call(ctx context.Context, method, path string, body, out any) error {
	var r io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(e.cfg.APIURL, "/")+path, r)
	if err != nil {
		return err
	}
	req.Header.Set("X-API-KEY", e.cfg.APIKey)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(data))
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

// cleanup kills what the run left on the API: the provider's sandboxes.
func (e *e2bLab) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, _ := e.p.List(ctx)
	for _, in := range list {
		e.p.Kill(ctx, in.Handle)
	}
}

func (r *E2BProviderResult) rows() []Row {
	if r.Skipped != "" {
		return []Row{{"sbx e2b create→ready p50", "-", "e2b: " + r.Skipped, 0, "", nil}}
	}
	if r.Create.N == 0 {
		return nil // the run stopped before
	}
	t, met := maxRatio(Ratio(r.Create.P50, r.Direct.P50), 1.1)
	rows := []Row{
		{"sbx e2b create→ready p50", msText(r.Create.P50), "E2B API create+envd " + msText(r.Direct.P50), Ratio(r.Create.P50, r.Direct.P50), t + " E2B API", met},
		{"sbx e2b create→ready p95", msText(r.Create.P95), "E2B API create+envd " + msText(r.Direct.P95), Ratio(r.Create.P95, r.Direct.P95), "", nil},
	}
	if r.Pause != nil && r.DirectPause != nil {
		rows = append(rows, Row{"sbx e2b pause p50", msText(r.Pause.P50), "E2B API pause " + msText(r.DirectPause.P50), Ratio(r.Pause.P50, r.DirectPause.P50), "", nil})
	}
	if r.Resume != nil && r.DirectResume != nil {
		rows = append(rows, Row{"sbx e2b resume p50", msText(r.Resume.P50), "E2B API connect " + msText(r.DirectResume.P50), Ratio(r.Resume.P50, r.DirectResume.P50), "", nil})
	}
	return rows
}
