package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"syscall"

	"github.com/sbxdev/sbx/apiv1"
)

// The agent's errors: every failure a handler answers is
// an *apiv1.Error made by one of these, and fsError maps what the file system
// says to the same few kinds.

// apiError is an error envelope with a formatted detail.
func apiError(code int, format string, args ...any) *apiv1.Error {
	return &apiv1.Error{Code: code, Type: apiv1.ErrorType(code), Detail: fmt.Sprintf(format, args...), Errors: []apiv1.FieldError{}}
}

func invalid(format string, args ...any) *apiv1.Error {
	return apiError(http.StatusBadRequest, format, args...)
}

func notFound(format string, args ...any) *apiv1.Error {
	return apiError(http.StatusNotFound, format, args...)
}

func conflict(format string, args ...any) *apiv1.Error {
	return apiError(http.StatusConflict, format, args...)
}

// fsError describes a failed file operation on path: the path and the
// reason, with the status the reason deserves. A nil err stays nil.
func fsError(path string, err error) error {
	if err == nil {
		return nil
	}
	var e *apiv1.Error
	if errors.As(err, &e) {
		return e
	}
	for _, m := range fsReasons {
		if errors.Is(err, m.err) {
			return apiError(m.code, "%s: %s", path, m.reason)
		}
	}
	return apiError(http.StatusInternalServerError, "%s: %v", path, unwrapPath(err))
}

var fsReasons = []struct {
	err    error
	code   int
	reason string
}{
	{fs.ErrNotExist, http.StatusNotFound, "not found"},
	{fs.ErrExist, http.StatusConflict, "already exists"},
	{fs.ErrPermission, http.StatusForbidden, "permission denied"},
	{syscall.EISDIR, http.StatusBadRequest, "is a directory"},
	{syscall.ENOTDIR, http.StatusBadRequest, "not a directory"},
	{syscall.ENOTEMPTY, http.StatusConflict, "directory not empty"},
	{syscall.EXDEV, http.StatusBadRequest, "on another file system"},
	{syscall.EINVAL, http.StatusBadRequest, "invalid argument"},
	{syscall.EROFS, http.StatusForbidden, "read-only file system"},
	{syscall.ENOSPC, http.StatusInternalServerError, "no space left on device"},
}

// unwrapPath is the reason inside a *fs.PathError or *os.LinkError, whose
// own message would name a temporary file rather than the caller's path.
func unwrapPath(err error) error {
	if u := errors.Unwrap(err); u != nil {
		return u
	}
	return err
}
