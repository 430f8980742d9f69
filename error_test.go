package sbx

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
)

func TestErrorCodeAndMessage(t *testing.T) {
	cause := errors.New("disk I/O error at /var/lib/sbx")
	for _, c := range []struct {
		name    string
		err     error
		code    Code
		message string
		text    string // err.Error()
	}{
		{"an Error", Errorf(ENotFound, "sandbox %s not found", "sbx-a"), ENotFound, "sandbox sbx-a not found", "sandbox sbx-a not found"},
		{"an Error with a cause", &Error{Code: EUnavailable, Message: "the ledger is down", Err: cause}, EUnavailable, "the ledger is down", "the ledger is down: disk I/O error at /var/lib/sbx"},
		{"a wrapped Error", fmt.Errorf("handling: %w", Errorf(EConflict, "busy")), EConflict, "busy", "handling: busy"},
		{"a plain error", cause, EInternal, "internal error", cause.Error()},
		{"a context error", context.DeadlineExceeded, EInternal, "internal error", "context deadline exceeded"},
		{"nil", nil, EInternal, "internal error", ""},
	} {
		if got := ErrorCode(c.err); got != c.code {
			t.Errorf("%s: ErrorCode = %q, want %q", c.name, got, c.code)
		}
		if got := ErrorMessage(c.err); got != c.message {
			t.Errorf("%s: ErrorMessage = %q, want %q", c.name, got, c.message)
		}
		if c.err != nil && c.err.Error() != c.text {
			t.Errorf("%s: Error() = %q, want %q", c.name, c.err.Error(), c.text)
		}
	}
}

// The cause is kept for the logs and for errors.Is, never in the message.
func TestErrorUnwrap(t *testing.T) {
	cause := context.Canceled
	err := fmt.Errorf("outer: %w", &Error{Code: EInternal, Message: "stopped", Err: cause})
	if !errors.Is(err, context.Canceled) {
		t.Error("errors.Is does not find the cause")
	}
	if ErrorMessage(err) != "stopped" {
		t.Errorf("ErrorMessage = %q", ErrorMessage(err))
	}
	if (&Error{}).Unwrap() != nil {
		t.Error("an Error with no cause unwraps to one")
	}
}

func TestInvalid(t *testing.T) {
	e := Invalid("timeout", "%s must be between 1 and %d seconds", "timeout", 3600)
	want := &Error{Code: EInvalid, Message: "timeout must be between 1 and 3600 seconds",
		Fields: []FieldError{{"timeout", "timeout must be between 1 and 3600 seconds"}}}
	if !reflect.DeepEqual(e, want) {
		t.Errorf("Invalid = %+v, want %+v", e, want)
	}
}

func TestProblems(t *testing.T) {
	var p Problems
	if p.Err() != nil {
		t.Error("no problems is an error")
	}
	p.Add("name", "name is required")
	p.Add("value", "value is longer than %d bytes", 10)
	err := p.Err()
	if ErrorCode(err) != EInvalid || ErrorMessage(err) != "name is required; value is longer than 10 bytes" {
		t.Errorf("Err = %v (%s)", err, ErrorCode(err))
	}
	var e *Error
	if !errors.As(err, &e) || !reflect.DeepEqual(e.Fields, []FieldError{{"name", "name is required"}, {"value", "value is longer than 10 bytes"}}) {
		t.Errorf("fields = %+v", e)
	}
}
