package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
)

// E2BResult is E2B's envd protocol (through serve, as E2B's SDKs reach
// it: E2B_SANDBOX_URL with the E2b-Sandbox-Id header) against sbx's own
// agent API, in the same sandbox: commands.run('true') (a Connect
// server stream, bash -l -c true as the SDK sends it) against POST
// …/commands, and a 100 MB file's download (GET /files) against GET
// …/files.
type E2BResult struct {
	Run      Pair `json:"run"`      // Local: envd's Process.Start; Runsc: sbx's /commands
	Download Pair `json:"download"` // Local: envd's /files; Runsc: sbx's /files
}

// downloadMB is the size of the file the benchmark downloads.
const downloadMB = 100

// E2B runs the E2B benchmark on a real serve in this process.
func E2B(ctx context.Context, cfg Config) (*Report, error) {
	return inLab(ctx, cfg, "e2b", func(e *execLab, r *Report) error {
		r.E2B = &E2BResult{}
		envd := envdClient{url: "http://" + e.addr, sandbox: e.sb.SandboxID(), token: e.sb.Data().AccessToken}
		native := func() error {
			res, err := e.sb.Commands.Run(ctx, "true", &client.CommandOptions{})
			if err == nil && res.ExitCode != 0 {
				err = fmt.Errorf("true exited %d", res.ExitCode)
			}
			return err
		}
		p, err := inTurns(e.cfg.Calls, 5, func() error { return envd.run(ctx, "true") }, native)
		if err != nil {
			return err
		}
		r.E2B.Run = p
		e.cfg.progress("true: envd p50 %.2f ms, sbx p50 %.2f ms", p.Local.P50, p.Runsc.P50)

		const path = "/tmp/sbx-bench-e2b"
		if _, err := e.sb.Commands.Run(ctx, fmt.Sprintf("head -c %dM /dev/urandom > %s", downloadMB, path), &client.CommandOptions{}); err != nil {
			return err
		}
		read := func(open func() (io.ReadCloser, error)) func() error {
			return func() error {
				body, err := open()
				if err != nil {
					return err
				}
				defer body.Close()
				n, err := io.Copy(io.Discard, body)
				if err == nil && n != downloadMB<<20 {
					err = fmt.Errorf("read %d bytes of %d", n, downloadMB<<20)
				}
				return err
			}
		}
		p, err = inTurns(max(3, e.cfg.Calls/10), 2,
			read(func() (io.ReadCloser, error) { return envd.download(ctx, path) }),
			read(func() (io.ReadCloser, error) { return e.sb.Files.Read(ctx, path) }))
		if err != nil {
			return err
		}
		r.E2B.Download = p
		e.cfg.progress("%d MB: envd p50 %.2f ms, sbx p50 %.2f ms", downloadMB, p.Local.P50, p.Runsc.P50)
		return nil
	})
}

// rows are the E2B benchmark's lines, against their goal: envd ≤ 1.1×
// sbx's own API.
func (b *E2BResult) rows() []Row {
	var rows []Row
	for _, m := range []struct {
		name string
		p    Pair
	}{{"E2B commands.run('true') p50", b.Run}, {fmt.Sprintf("E2B files.read %d MB p50", downloadMB), b.Download}} {
		t, met := maxRatio(Ratio(m.p.Local.P50, m.p.Runsc.P50), 1.1)
		rows = append(rows, Row{m.name, msText(m.p.Local.P50), "sbx API " + msText(m.p.Runsc.P50), Ratio(m.p.Local.P50, m.p.Runsc.P50), t + " sbx API", met})
	}
	return rows
}

// envdClient speaks envd's protocol to one sandbox through serve, as E2B's
// SDKs do with E2B_SANDBOX_URL.
type envdClient struct {
	url, sandbox, token string
}

func (c envdClient) request(ctx context.Context, method, path, contentType string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.url+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("E2b-Sandbox-Id", c.sandbox)
	req.Header.Set("E2b-Sandbox-Port", strconv.Itoa(apiv1.AgentPort))
	req.Header.Set(apiv1.AccessTokenHeader, c.token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("Connect-Protocol-Version", "1")
	}
	resp, err := http.DefaultClient.Do(req)
	if err == nil && resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		resp.Body.Close()
		err = fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, msg)
	}
	return resp, err
}

// run starts cmd as commands.run does (Process.Start, a Connect server
// stream) and reads the stream to its end.
func (c envdClient) run(ctx context.Context, cmd string) error {
	msg, _ := json.Marshal(map[string]any{"process": map[string]any{"cmd": "/bin/bash", "args": []string{"-l", "-c", cmd}}, "stdin": false})
	env := binary.BigEndian.AppendUint32([]byte{0}, uint32(len(msg)))
	resp, err := c.request(ctx, http.MethodPost, "/process.Process/Start", "application/connect+json", append(env, msg...))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var exit *int
	for {
		var head [5]byte
		if _, err := io.ReadFull(resp.Body, head[:]); err != nil {
			return fmt.Errorf("the stream ended without its end: %w", err)
		}
		data := make([]byte, binary.BigEndian.Uint32(head[1:]))
		if _, err := io.ReadFull(resp.Body, data); err != nil {
			return err
		}
		if head[0]&2 != 0 { // the end of the stream
			if exit == nil || *exit != 0 {
				return fmt.Errorf("%s did not exit 0: %s", cmd, data)
			}
			return nil
		}
		var ev struct {
			Event struct {
				End *struct {
					ExitCode int `json:"exitCode"`
				} `json:"end"`
			} `json:"event"`
		}
		if err := json.Unmarshal(data, &ev); err != nil {
			return err
		}
		if ev.Event.End != nil {
			exit = &ev.Event.End.ExitCode
		}
	}
}

// download reads a file as files.read does (GET /files).
func (c envdClient) download(ctx context.Context, path string) (io.ReadCloser, error) {
	resp, err := c.request(ctx, http.MethodGet, "/files?path="+path, "", nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}
