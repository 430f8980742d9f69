package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/strictjson"
)

// error renders err in the envelope; internal causes are logged, not shown.
func (s *Server) error(w http.ResponseWriter, r *http.Request, err error) {
	code := sbx.ErrorCode(err)
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		return // the caller is gone
	}
	status := code.HTTPStatus()
	if code == sbx.EInternal {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	} else {
		s.log.Debug("request refused", "method", r.Method, "path", r.URL.Path, "status", status, "err", err)
	}
	body := apiv1.Error{Code: status, Type: string(code), Detail: clip(sbx.ErrorMessage(err)), Errors: []apiv1.FieldError{}}
	var e *sbx.Error
	if errors.As(err, &e) {
		for _, f := range e.Fields {
			body.Errors = append(body.Errors, apiv1.FieldError{Field: clip(f.Field), Message: clip(f.Message)})
		}
		if e.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(e.RetryAfter.Seconds()+0.5)))
		}
	}
	writeJSON(w, status, body)
}

// maxDetail bounds an error's detail and each field message.
const maxDetail = 1024

// clip bounds what an error echoes of the caller's input, wherever a
// message quoted it: no word (a run without spaces) longer than
// strictjson.MaxEcho bytes, no message longer than maxDetail.
func clip(msg string) string {
	if len(msg) <= strictjson.MaxEcho {
		return msg
	}
	words := strings.Split(msg, " ")
	for i, w := range words {
		words[i] = strictjson.Short(w)
	}
	return strictjson.Cut(strings.Join(words, " "), maxDetail)
}
