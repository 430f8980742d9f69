package client

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/sbxdev/sbx/apiv1"
)

// maxErrorBody bounds how much of a refused answer is read.
const maxErrorBody = 64 << 10

// errorTypes names the error type the server uses for each status, for
// answers that did not come with an envelope (from a proxy, say).
var errorTypes = map[int]string{
	http.StatusBadRequest:          "invalid",
	http.StatusUnauthorized:        "unauthorized",
	http.StatusForbidden:           "forbidden",
	http.StatusNotFound:            "not_found",
	http.StatusConflict:            "conflict",
	http.StatusNotImplemented:      "not_supported",
	http.StatusBadGateway:          "provider_error",
	http.StatusServiceUnavailable:  "unavailable",
	http.StatusGatewayTimeout:      "timeout",
	http.StatusInternalServerError: "internal",
}

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
	typ, ok := errorTypes[resp.StatusCode]
	if !ok {
		typ = "http_" + fmt.Sprint(resp.StatusCode)
	}
	detail := resp.Status
	if text := strings.TrimSpace(string(data)); text != "" {
		detail += ": " + text
	}
	return &apiv1.Error{Code: resp.StatusCode, Type: typ, Detail: detail}
}
