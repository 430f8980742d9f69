package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
)

type callerKey struct{}

// secretKey is where authenticate leaves the request's API key, for the
// MCP endpoint, whose tool calls are API requests made with it.
type secretKey struct{}

// authenticate admits requests that carry a valid API key, as
// "Authorization: Bearer <key>" or "X-API-Key: <key>", or, from a browser's
// WebSocket, which cannot set headers, as the subprotocol
// apiv1.KeyProtocolPrefix+<key>.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		offered := takeKeyProtocol(r.Header)
		secret := r.Header.Get("X-API-Key")
		if auth := r.Header.Get("Authorization"); secret == "" && auth != "" {
			scheme, token, _ := strings.Cut(auth, " ")
			if !strings.EqualFold(scheme, "Bearer") {
				s.error(w, r, sbx.Errorf(sbx.EUnauthorized, "the Authorization header must be \"Bearer <API key>\""))
				return
			}
			secret = strings.TrimSpace(token)
		}
		if secret == "" {
			secret = offered
		}
		if secret == "" {
			s.error(w, r, sbx.Errorf(sbx.EUnauthorized, "an API key is required: send \"Authorization: Bearer <key>\" or \"X-API-Key: <key>\" (or, on a WebSocket, offer the subprotocol %s<key>)", apiv1.KeyProtocolPrefix))
			return
		}
		c, err := s.tenancy.Authenticate(r.Context(), secret)
		if err != nil {
			s.error(w, r, err)
			return
		}
		ctx := context.WithValue(context.WithValue(r.Context(), callerKey{}, c), secretKey{}, secret)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// caller is who the request acts for; authenticate put it there.
func caller(r *http.Request) sbx.Caller { return r.Context().Value(callerKey{}).(sbx.Caller) }

// apiKey is the API key the request was authenticated with.
func apiKey(r *http.Request) string { s, _ := r.Context().Value(secretKey{}).(string); return s }

// takeKeyProtocol removes the WebSocket subprotocol that carries an API key
// from h, leaving the others offered, and returns the key ("" when none is
// offered). It is taken off whether or not it is used, so that the key
// never travels past serve (to a sandbox's agent, say).
func takeKeyProtocol(h http.Header) string {
	const name = "Sec-WebSocket-Protocol"
	if len(h.Values(name)) == 0 {
		return ""
	}
	var key string
	var rest []string
	for _, v := range h.Values(name) {
		for p := range strings.SplitSeq(v, ",") {
			p = strings.TrimSpace(p)
			if k, ok := strings.CutPrefix(p, apiv1.KeyProtocolPrefix); ok {
				key = k
			} else if p != "" {
				rest = append(rest, p)
			}
		}
	}
	h.Del(name)
	if len(rest) > 0 {
		h.Set(name, strings.Join(rest, ", "))
	}
	return key
}
