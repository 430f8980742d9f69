package agentcall

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/ndjson"
)

// Serve's own work inside a sandbox (materializing a runtime's
// capabilities): writing a file and running a script to its end, as root
// (it writes system files such as /etc/profile.d's), not as the sandbox's
// default user.

// outputTail bounds the output Run keeps: the end of it, where a failing
// script says why.
const outputTail = 16 << 10

// WriteFile writes data to path in the sandbox whose agent is at addr, with
// permissions mode.
func WriteFile(ctx context.Context, addr, token, path string, data []byte, mode fs.FileMode) error {
	q := url.Values{"path": {path}, "mode": {fmt.Sprintf("%o", mode.Perm())}, "user": {"root"}}
	resp, err := do(ctx, addr, token, http.MethodPut, "/files?"+q.Encode(), "application/octet-stream", bytes.NewReader(data))
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// Run runs script with /bin/sh -c in the sandbox whose agent is at addr,
// with env added and killed after timeout, and returns its exit code (-1 when a signal or the timeout ended it) and the last 16 KiB of
// its stdout and stderr together.
func Run(ctx context.Context, addr, token, script string, env map[string]string, timeout time.Duration) (int, string, error) {
	body, err := json.Marshal(apiv1.StartCommandRequest{Args: []string{"/bin/sh", "-c", script}, Env: env, User: "root", Timeout: int64(timeout.Round(time.Second) / time.Second)})
	if err != nil {
		return 0, "", err
	}
	resp, err := do(ctx, addr, token, http.MethodPost, "/commands", "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var out []byte
	code, ended := 0, false
	err = ndjson.Read(resp.Body, func(ev apiv1.CommandEvent) error {
		switch ev.Type {
		case "stdout", "stderr":
			out = append(out, ev.Data...)
			if len(out) > 2*outputTail {
				out = append(out[:0], out[len(out)-outputTail:]...)
			}
		case "end":
			if len(out) > outputTail {
				out = out[len(out)-outputTail:]
			}
			code, ended = -1, true
			if ev.ExitCode != nil {
				code = *ev.ExitCode
			}
			if ev.Error != "" {
				out = append(out, "sbx: "+ev.Error+"\n"...)
			}
			return io.EOF
		}
		return nil
	})
	switch {
	case err != nil:
		return 0, "", fmt.Errorf("the agent's command stream: %w", err)
	case !ended:
		return 0, "", fmt.Errorf("the agent's command stream ended before the command did")
	}
	return code, string(out), nil
}

// do sends one request to the agent at addr and fails unless it answers 2xx.
func do(ctx context.Context, addr, token, method, path, contentType string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set(apiv1.AccessTokenHeader, token)
	req.Header.Set("Content-Type", contentType)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("agent %s %s: %s: %s", method, req.URL.Path, resp.Status, bytes.TrimSpace(msg))
	}
	return resp, nil
}
