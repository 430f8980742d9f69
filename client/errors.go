package client

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/sbxdev/sbx/apiv1"
)

// maxErrorBody bounds how much of a refused answer is read.
const maxErrorBody = 64 << 10

// readError turns a non-2xx answer into an *apiv1.Error: the server's
// envelope when the body is one, else one made from the status and body text.
func readError(resp *http.Response) *apiv1.Error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var env apiv1.Error
	if json.Unmarshal(data, &env) == nil && env.Detail != "" {
		if env.Code == 0 {
			env.Code = resp.StatusCode
		}
		return &env
	}
	detail := resp.Status
	if text := strings.TrimSpace(string(data)); text != "" {
		detail += ": " + text
	}
	return &apiv1.Error{Code: resp.StatusCode, Type: apiv1.ErrorType(resp.StatusCode), Detail: detail}
}

// SandboxStoppedError ends a stream (a command's output, a terminal, a
// watch) whose sandbox stopped running first: Reason is serve's word for
// why, e.g. "sandbox sbx-… failed: out of memory: …", "sandbox sbx-… was
// deleted". Whatever the stream followed ended with the sandbox, or is
// paused with it.
type SandboxStoppedError struct{ Reason string }

func (e *SandboxStoppedError) Error() string { return e.Reason }
