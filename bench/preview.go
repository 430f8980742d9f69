package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/sbxdev/sbx/internal/echoserver"
	"github.com/sbxdev/sbx/local"
)

// PreviewResult is preview traffic through serve's proxy against the same
// requests sent straight to the sandbox's address from the host, in turns,
// and a wake by a preview request against `sbx sandbox resume`. Each Stat
// is of the time one request took, in milliseconds.
type PreviewResult struct {
	Small PreviewPair `json:"small_request"` // GET / of the echo server: 16 bytes, kept-alive connections
	// BareProxy is the small request through a bare httputil.ReverseProxy
	// in this process to the sandbox's address: the floor of any proxy hop
	// on this host, under sbx's.
	BareProxy Stat            `json:"bare_proxy"`
	Download  PreviewTransfer `json:"download"` // GET /bytes of FileMB
	Wake      WakeResult      `json:"wake"`
}

// PreviewPair is one measure through the preview proxy and straight to
// the sandbox.
type PreviewPair struct {
	Preview Stat `json:"preview"`
	Direct  Stat `json:"direct"`
}

// PreviewTransfer is a PreviewPair of moving MB megabytes (MiB).
type PreviewTransfer struct {
	MB int `json:"mb"`
	PreviewPair
}

// WakeResult is the first preview request to a sandbox hibernated with
// SizeMB held in memory (the wake included) against the API's resume of
// the same sandbox.
type WakeResult struct {
	SizeMB    int  `json:"size_mb"`
	ByRequest Stat `json:"by_request"`
	Resume    Stat `json:"resume"`
}

// previewPort is where the echo server listens in the sandbox.
const previewPort = 8080

// wakeMB is what the sandbox holds in memory when it is hibernated.
const wakeMB = 64

// Preview runs the preview benchmark: a real `sbx serve` in this process
// runs one sandbox with the echo server (`sbx agent echo`) on port 8080;
// the host reaches it through serve's preview host, with the sandbox's
// traffic token, and straight at the sandbox's address, in turns: Calls
// small requests, Rounds downloads of FileMB. Then, Rounds times, the
// sandbox holding 64 MB is hibernated and woken, once by a preview request
// and once by the API's resume.
func Preview(ctx context.Context, cfg Config) (*Report, error) {
	return inLab(ctx, cfg, "preview", func(e *execLab, r *Report) error {
		r.Preview = &PreviewResult{}
		p, err := newPreviewLab(ctx, e)
		if err != nil {
			return err
		}
		return p.measure(ctx, r.Preview)
	})
}

// previewLab is the preview benchmark's clients of one sandbox.
type previewLab struct {
	e       *execLab
	preview *http.Client // to serve, whatever host a URL names
	direct  *http.Client
	host    string // the sandbox's preview host
	addr    string // the sandbox's own address of the echo server
	token   string
}

// newPreviewLab starts the echo server and finds the sandbox's address,
// which the echo server sees requests come in on.
func newPreviewLab(ctx context.Context, e *execLab) (*previewLab, error) {
	sb := e.sb.Data()
	p := &previewLab{e: e, host: fmt.Sprintf("%d-%s.sbx.localhost", previewPort, sb.SandboxID), token: sb.TrafficToken,
		direct: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}}
	p.preview = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, e.addr)
		}}}
	if _, err := e.sb.Commands.StartArgs(ctx, []string{local.AgentMount, "agent", "echo", strconv.Itoa(previewPort)},
		&client.CommandOptions{Tag: "echo", DiscardOutput: true}); err != nil {
		return nil, err
	}
	var seen echoserver.Request
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		body, err := p.get(ctx, p.preview, "http://"+p.host+"/echo", -1)
		if err == nil {
			if err := json.Unmarshal(body, &seen); err != nil {
				return nil, fmt.Errorf("the echo server answered %q: %w", body, err)
			}
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the echo server never answered through the preview: %w", err)
		}
	}
	p.addr = seen.Local
	e.cfg.progress("echo server on port %d: preview host %s, sandbox address %s", previewPort, p.host, p.addr)
	return p, nil
}

// get sends GET url through c and answers the body, which must be want
// bytes long (-1: any length; a body of known length is counted, not kept).
func (p *previewLab) get(ctx context.Context, c *http.Client, url string, want int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set(apiv1.TrafficTokenHeader, p.token)
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("GET %s: %s %s", url, resp.Status, body)
	}
	if want < 0 {
		return io.ReadAll(resp.Body)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil {
		err = sameSize("the body of "+url, n, want)
	}
	return nil, err
}

// measure times the small requests, the downloads and the wakes.
func (p *previewLab) measure(ctx context.Context, res *PreviewResult) error {
	cfg := p.e.cfg
	both := func(path string, want int64) (func() error, func() error) {
		return func() error { _, err := p.get(ctx, p.preview, "http://"+p.host+path, want); return err },
			func() error { _, err := p.get(ctx, p.direct, "http://"+p.addr+path, want); return err }
	}
	bare, stop, err := p.bareProxy()
	if err != nil {
		return err
	}
	defer stop()
	viaPreview, direct := both("/", 16)
	viaBare := func() error { _, err := p.get(ctx, bare.c, bare.url, 16); return err }
	small, err := inTurnsOf(cfg.Calls, 20, viaPreview, direct, viaBare)
	if err != nil {
		return fmt.Errorf("small requests: %w", err)
	}
	res.Small, res.BareProxy = PreviewPair{small[0], small[1]}, small[2]
	cfg.progress("small request: preview p50 %.2f ms, direct p50 %.2f ms, bare proxy p50 %.2f ms", small[0].P50, small[1].P50, small[2].P50)

	n := int64(cfg.FileMB) << 20
	viaPreview, direct = both("/bytes?n="+strconv.FormatInt(n, 10), n)
	dl, err := inTurns(cfg.Rounds, 1, viaPreview, direct)
	if err != nil {
		return fmt.Errorf("download: %w", err)
	}
	res.Download = PreviewTransfer{MB: cfg.FileMB, PreviewPair: PreviewPair{dl.Local, dl.Runsc}}
	t := Transfer{MB: cfg.FileMB, Pair: dl}
	cfg.progress("download %d MB: preview %s, direct %s", cfg.FileMB, t.text(dl.Local), t.text(dl.Runsc))

	if err := p.e.run(ctx, &client.CommandOptions{User: "root"}, "/bin/sh", "-c", fmt.Sprintf("head -c %dM /dev/urandom > /dev/shm/held", wakeMB)); err != nil {
		return err
	}
	id := p.e.sb.SandboxID()
	var byRequest, resume []time.Duration
	for i := range cfg.Rounds {
		err := inTurn(i, 2, func(k int) error {
			if _, err := p.e.c.Hibernate(ctx, id); err != nil {
				return err
			}
			if k == 0 {
				d, err := timeIt(func() error { _, err := p.get(ctx, p.preview, "http://"+p.host+"/", 16); return err })
				byRequest = append(byRequest, d)
				return err
			}
			d, err := timeIt(func() error { _, err := p.e.c.Resume(ctx, id, 0); return err })
			resume = append(resume, d)
			return err
		})
		if err != nil {
			return fmt.Errorf("wake: %w", err)
		}
	}
	res.Wake = WakeResult{SizeMB: wakeMB, ByRequest: NewStat(byRequest), Resume: NewStat(resume)}
	cfg.progress("wake %d MB: by a preview request p50 %.0f ms, by resume p50 %.0f ms", wakeMB, res.Wake.ByRequest.P50, res.Wake.Resume.P50)
	return nil
}

// bareClient reaches the sandbox's echo server through a bare proxy.
type bareClient struct {
	c   *http.Client
	url string
}

// bareProxy starts a bare httputil.ReverseProxy on loopback to the
// sandbox's address, the floor of any proxy hop on this host; stop ends it.
func (p *previewLab) bareProxy() (bareClient, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return bareClient{}, nil, err
	}
	target := &url.URL{Scheme: "http", Host: p.addr}
	srv := &http.Server{Handler: &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		Transport: &http.Transport{MaxIdleConnsPerHost: 4},
	}}
	go srv.Serve(ln)
	c := bareClient{&http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}, "http://" + ln.Addr().String() + "/"}
	return c, func() { srv.Close() }, nil
}
