package httpapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
)

// statuses is the one table from error code to HTTP status.
var statuses = map[sbx.Code]int{
	sbx.EInvalid:      http.StatusBadRequest,
	sbx.EUnauthorized: http.StatusUnauthorized,
	sbx.EForbidden:    http.StatusForbidden,
	sbx.EKYCRequired:  http.StatusForbidden,
	sbx.EPlanLimit:    http.StatusForbidden,
	sbx.ENoCredits:    http.StatusPaymentRequired,
	sbx.ENotFound:     http.StatusNotFound,
	sbx.EConflict:     http.StatusConflict,
	sbx.EUnsupported:  http.StatusNotImplemented,
	sbx.EProvider:     http.StatusBadGateway,
	sbx.EUnavailable:  http.StatusServiceUnavailable,
	sbx.ETimeout:      http.StatusGatewayTimeout,
	sbx.EInternal:     http.StatusInternalServerError,
}

// error renders err in the envelope; internal causes are logged, not shown.
func (s *Server) error(w http.ResponseWriter, r *http.Request, err error) {
	code := sbx.ErrorCode(err)
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		return // the caller is gone
	}
	status := statuses[code]
	if code == sbx.EInternal {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	} else {
		s.log.Debug("request refused", "method", r.Method, "path", r.URL.Path, "status", status, "err", err)
	}
	body := apiv1.Error{Code: status, Type: string(code), Detail: sbx.ErrorMessage(err), Errors: []apiv1.FieldError{}}
	var e *sbx.Error
	if errors.As(err, &e) {
		for _, f := range e.Fields {
			body.Errors = append(body.Errors, apiv1.FieldError{Field: f.Field, Message: f.Message})
		}
	}
	writeJSON(w, status, body)
}
