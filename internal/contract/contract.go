// Package contract checks real HTTP traffic against sbx's OpenAPI document:
// tests route their client through Validator.Transport, and every response
// must belong to a documented operation, carry a documented status and match
// its schema. It is test support and is never linked into the sbx binary.
package contract

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// Validator checks responses against one document and remembers what it saw.
type Validator struct {
	router routers.Router
	ops    []string

	mu   sync.Mutex
	errs []error
	seen map[string]bool
}

// New loads and validates the document.
func New(doc []byte) (*Validator, error) {
	t, err := openapi3.NewLoader().LoadFromData(doc)
	if err != nil {
		return nil, err
	}
	if err := t.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("the OpenAPI document is invalid: %w", err)
	}
	router, err := gorillamux.NewRouter(t)
	if err != nil {
		return nil, err
	}
	v := &Validator{router: router, seen: map[string]bool{}}
	for path, item := range t.Paths.Map() {
		for method := range item.Operations() {
			v.ops = append(v.ops, method+" "+path)
		}
	}
	sort.Strings(v.ops)
	return v, nil
}

// Operations returns every documented operation as "METHOD /path/{param}".
func (v *Validator) Operations() []string { return append([]string(nil), v.ops...) }

// Errors returns every mismatch recorded so far.
func (v *Validator) Errors() []error {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]error(nil), v.errs...)
}

// Unexercised returns the documented operations no response was seen for.
func (v *Validator) Unexercised() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []string
	for _, op := range v.ops {
		if !v.seen[op] {
			out = append(out, op)
		}
	}
	return out
}

// Transport wraps base (nil: http.DefaultTransport) so that every response
// passing through is checked. Mismatches are recorded, not returned: the
// caller still sees the real response.
func (v *Validator) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		resp, err := base.RoundTrip(req)
		if err != nil {
			return resp, err
		}
		if streamed(resp) {
			v.check(req, resp, nil)
			return resp, nil
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		v.check(req, resp, body)
		return resp, nil
	})
}

// streamed reports whether a response's body is a stream (NDJSON events,
// raw bytes, a WebSocket): only its status and headers are checked, and the
// body passes untouched.
func streamed(resp *http.Response) bool {
	ct, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
	return resp.StatusCode == http.StatusSwitchingProtocols ||
		(resp.StatusCode/100 == 2 && (ct == "application/x-ndjson" || ct == "application/octet-stream"))
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// check validates one exchange; a nil body is not checked.
func (v *Validator) check(req *http.Request, resp *http.Response, body []byte) {
	where := fmt.Sprintf("%s %s → %d", req.Method, req.URL.RequestURI(), resp.StatusCode)
	route, params, err := v.router.FindRoute(req)
	if err != nil {
		if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
			return // a request for something that is not an operation at all
		}
		v.fail(fmt.Errorf("%s: no documented operation: %v", where, err))
		return
	}
	v.mu.Lock()
	v.seen[route.Method+" "+route.Path] = true
	v.mu.Unlock()
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
		},
		Status: resp.StatusCode, Header: resp.Header, Body: io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true, ExcludeResponseBody: body == nil},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		msg, _, _ := strings.Cut(err.Error(), "\nSchema:") // the failing field, not the whole schema
		v.fail(fmt.Errorf("%s: %s", where, strings.ReplaceAll(msg, "\n", " ")))
	}
}

func (v *Validator) fail(err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.errs = append(v.errs, err)
}
