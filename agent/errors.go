package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"syscall"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/strictjson"
)

// The agent's errors: every failure a handler answers is
// an *apiv1.Error made by one of these, and fsError maps what the file system
// says to the same few kinds. No error quotes more than the first
// strictjson.MaxEcho bytes of what the caller sent (see quote and short).

// apiError is an error envelope with a formatted detail.
func apiError(code int, format string, args ...any) *apiv1.Error {
	return &apiv1.Error{Code: code, Type: apiv1.ErrorType(code), Detail: fmt.Sprintf(format, args...), Errors: []apiv1.FieldError{}}
}

func invalid(format string, args ...any) *apiv1.Error {
	return apiError(http.StatusBadRequest, format, args...)
}

// invalidField is a 400 about one field (or query parameter) of the request.
func invalidField(field, format string, args ...any) *apiv1.Error {
	e := invalid(format, args...)
	e.Errors = []apiv1.FieldError{{Field: short(field), Message: e.Detail}}
	return e
}

func notFound(format string, args ...any) *apiv1.Error {
	return apiError(http.StatusNotFound, format, args...)
}

func conflict(format string, args ...any) *apiv1.Error {
	return apiError(http.StatusConflict, format, args...)
}

// quote is a caller's string as an error shows it: quoted, at most
// strictjson.MaxEcho bytes of it, then "…".
func quote(s string) string { return strictjson.Quote(s) }

// short is a caller's path as an error shows it: at most
// strictjson.MaxEcho bytes of it, then "…".
func short(s string) string { return strictjson.Short(s) }

// fsError describes a failed file operation on path: the path (short) and
// the reason, with the status the reason deserves: a 4xx for whatever the
// path names that the agent cannot serve, 503 or 507 when the agent or its
// disk is out of room. A nil err stays nil.
func fsError(path string, err error) error {
	if err == nil {
		return nil
	}
	if e, ok := errors.AsType[*apiv1.Error](err); ok {
		return e
	}
	for _, m := range fsReasons {
		if errors.Is(err, m.err) {
			return apiError(m.code, "%s: %s", short(path), m.reason)
		}
	}
	if errno, ok := errors.AsType[syscall.Errno](err); ok {
		// Whatever else the system says of a path the caller chose is
		// about that path.
		return apiError(http.StatusBadRequest, "%s: %s", short(path), errno.Error())
	}
	return apiError(http.StatusInternalServerError, "%s: %v", short(path), unwrapPath(err))
}

// errNotRegular is a path that names something other than a regular file
// (a device, a named pipe, a socket) where a file's contents are wanted.
var errNotRegular = errors.New("not a regular file")

var fsReasons = []struct {
	err    error
	code   int
	reason string
}{
	{fs.ErrNotExist, http.StatusNotFound, "not found"},
	{fs.ErrExist, http.StatusConflict, "already exists"},
	{fs.ErrPermission, http.StatusForbidden, "permission denied"},
	{errNotRegular, http.StatusBadRequest, "not a regular file"},
	{syscall.EISDIR, http.StatusBadRequest, "is a directory"},
	{syscall.ENOTDIR, http.StatusBadRequest, "not a directory"},
	{syscall.ENAMETOOLONG, http.StatusBadRequest, "file name too long (at most 255 bytes a component, 4095 in all)"},
	{syscall.ELOOP, http.StatusBadRequest, "too many levels of symbolic links"},
	{syscall.ENOTEMPTY, http.StatusConflict, "directory not empty"},
	{syscall.EBUSY, http.StatusConflict, "busy"},
	{syscall.ETXTBSY, http.StatusConflict, "text file busy"},
	{syscall.EXDEV, http.StatusBadRequest, "on another file system"},
	{syscall.EINVAL, http.StatusBadRequest, "invalid argument"},
	{syscall.ESPIPE, http.StatusBadRequest, "cannot seek"},
	{syscall.EIO, http.StatusBadRequest, "cannot be read or written (input/output error)"},
	{syscall.ENXIO, http.StatusBadRequest, "no such device or address"},
	{syscall.ENODEV, http.StatusBadRequest, "no such device"},
	{syscall.EROFS, http.StatusForbidden, "read-only file system"},
	{syscall.EFBIG, http.StatusRequestEntityTooLarge, "file too large"},
	{syscall.ENOSPC, http.StatusInsufficientStorage, "no space left on device"},
	{syscall.EDQUOT, http.StatusInsufficientStorage, "disk quota exceeded"},
	{syscall.EMFILE, http.StatusServiceUnavailable, "the agent has too many open files"},
	{syscall.ENFILE, http.StatusServiceUnavailable, "the system has too many open files"},
	{syscall.ENOMEM, http.StatusServiceUnavailable, "out of memory"},
}

// unwrapPath is the reason inside a *fs.PathError or *os.LinkError, whose
// own message would name a temporary file rather than the caller's path.
func unwrapPath(err error) error {
	if u := errors.Unwrap(err); u != nil {
		return u
	}
	return err
}
