package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/sbxdev/sbx"
)

type callerKey struct{}

// authenticate admits requests that carry a valid API key, as
// "Authorization: Bearer <key>" or "X-API-Key: <key>".
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
			s.error(w, r, sbx.Errorf(sbx.EUnauthorized, "an API key is required: send \"Authorization: Bearer <key>\" or \"X-API-Key: <key>\""))
			return
		}
		c, err := s.tenancy.Authenticate(r.Context(), secret)
		if err != nil {
			s.error(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	})
}

// caller is who the request acts for; authenticate put it there.
func caller(r *http.Request) sbx.Caller { return r.Context().Value(callerKey{}).(sbx.Caller) }
