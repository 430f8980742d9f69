package sbx

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Code classifies an error for callers; the API maps each code to one HTTP status.
type Code string

// The error codes.
const (
	EInvalid          Code = "invalid"                // bad input: 400
	ETooLarge         Code = "too_large"              // a request body over the route's bound: 413
	EUnsupportedMedia Code = "unsupported_media_type" // a body of a type the route does not take: 415
	EUnauthorized     Code = "unauthorized"           // no or bad credentials: 401
	EForbidden        Code = "forbidden"              // credentials lack the right: 403
	EKYCRequired      Code = "kyc_required"           // the org or user must be verified first: 403
	EPlanLimit        Code = "plan_limit_exceeded"    // the org's plan does not allow it: 403
	ENoCredits        Code = "insufficient_credits"   // the org's balance is empty: 402
	EMethodNotAllowed Code = "method_not_allowed"     // the route takes other methods: 405
	ENotFound         Code = "not_found"              // no such thing visible to the caller: 404
	ENoStorage        Code = "insufficient_storage"   // the host's disk has no room for it: 507
	EKeyReused        Code = "idempotency_key_reused" // an Idempotency-Key sent again with another request: 422
	ENoWarmSandbox    Code = "warm_pool_unavailable"  // a create that requires its template's warm pool found no member ready: 503
	EConflict         Code = "conflict"               // the current state forbids it: 409
	EUnsupported      Code = "not_supported"          // the provider cannot do it: 501
	EProvider         Code = "provider_error"         // the provider failed the operation: 502
	EUnavailable      Code = "unavailable"            // a dependency is missing or down: 503
	ETimeout          Code = "timeout"                // a bounded wait ran out: 504
	EInternal         Code = "internal"               // a bug or an unexpected failure: 500
)

// Error is an error with a code and a message meant for the user. Err, when
// set, is the internal cause: logged, never shown.
type Error struct {
	Code    Code
	Message string
	Fields  []FieldError // for EInvalid: the offending fields, when known
	Err     error
	// RetryAfter, when set, is how long a caller should wait before the
	// same request may succeed (HTTP's Retry-After).
	RetryAfter time.Duration
}

// FieldError names one bad field of a request and what is wrong with it.
type FieldError struct {
	Field   string
	Message string
}

// Invalid returns an EInvalid error for one field.
func Invalid(field, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	return &Error{Code: EInvalid, Message: msg, Fields: []FieldError{{field, msg}}}
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with code and a formatted user message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, or EInternal.
func ErrorCode(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EInternal
}

// ErrorMessage returns the user message of err, hiding internal causes.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

// Problems collects what is wrong with a request, field by field, into one
// EInvalid error that names them all.
type Problems []FieldError

// Add records a problem with field.
func (p *Problems) Add(field, format string, args ...any) {
	*p = append(*p, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

// Err is nil when nothing was added, else one EInvalid naming every field.
func (p Problems) Err() error {
	if len(p) == 0 {
		return nil
	}
	msgs := make([]string, len(p))
	for i, f := range p {
		msgs[i] = f.Message
	}
	return &Error{Code: EInvalid, Message: strings.Join(msgs, "; "), Fields: p}
}

// HTTPStatus is the code's HTTP status: the one table every HTTP surface
// answers errors by.
func (c Code) HTTPStatus() int {
	if s, ok := statuses[c]; ok {
		return s
	}
	return http.StatusInternalServerError
}

var statuses = map[Code]int{
	EInvalid:          http.StatusBadRequest,
	ETooLarge:         http.StatusRequestEntityTooLarge,
	EUnsupportedMedia: http.StatusUnsupportedMediaType,
	EUnauthorized:     http.StatusUnauthorized,
	EForbidden:        http.StatusForbidden,
	EKYCRequired:      http.StatusForbidden,
	EPlanLimit:        http.StatusForbidden,
	ENoCredits:        http.StatusPaymentRequired,
	EMethodNotAllowed: http.StatusMethodNotAllowed,
	ENotFound:         http.StatusNotFound,
	ENoStorage:        http.StatusInsufficientStorage,
	EKeyReused:        http.StatusUnprocessableEntity,
	ENoWarmSandbox:    http.StatusServiceUnavailable,
	EConflict:         http.StatusConflict,
	EUnsupported:      http.StatusNotImplemented,
	EProvider:         http.StatusBadGateway,
	EUnavailable:      http.StatusServiceUnavailable,
	ETimeout:          http.StatusGatewayTimeout,
	EInternal:         http.StatusInternalServerError,
}
