package agent

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sbxdev/sbx/apiv1"
)

// Connect's protocol (connectrpc.com/docs/protocol) with its JSON codec,
// written by hand for envd's procedures (envd.go): a Connect and protobuf
// runtime would cost more of the agent's binary, and so of every sandbox's
// memory, than these few frames do.
//
// A unary procedure takes a POST of application/json and answers 200 with
// the response message, or the error's HTTP status and {"code","message"}.
// A server-streaming one takes a POST of application/connect+json whose
// body is one envelope (a flags byte, a big-endian uint32 length, the JSON
// message) and answers 200 with envelopes, the last one the end of the
// stream (flags endStreamFlag): {} or {"error":{"code","message"}}; an
// error, even one before the first message, goes there.
//
// Messages are read as protobuf's JSON mapping reads them, leniently:
// unknown fields are ignored, and the types below take integers as numbers
// or strings, enums as names or numbers, bytes in either base64 alphabet,
// padded or not. They are written as protojson writes them: lowerCamel
// names, enums as names, 64-bit integers as strings, defaults omitted.

// maxRPCBody caps a request message: SendInput carries a process's input.
const maxRPCBody = 8 << 20

// Envelope flags.
const (
	compressedFlag = 0x01
	endStreamFlag  = 0x02
)

// Connect's error codes, those the agent answers.
const (
	codeCanceled           = "canceled"
	codeInvalidArgument    = "invalid_argument"
	codeDeadlineExceeded   = "deadline_exceeded"
	codeNotFound           = "not_found"
	codeAlreadyExists      = "already_exists"
	codePermissionDenied   = "permission_denied"
	codeResourceExhausted  = "resource_exhausted"
	codeFailedPrecondition = "failed_precondition"
	codeInternal           = "internal"
	codeUnavailable        = "unavailable"
	codeUnauthenticated    = "unauthenticated"
)

// connectStatus is the HTTP status of a unary answer failing with a code.
var connectStatus = map[string]int{
	codeCanceled:           499, // a client's closed request
	codeInvalidArgument:    http.StatusBadRequest,
	codeDeadlineExceeded:   http.StatusGatewayTimeout,
	codeNotFound:           http.StatusNotFound,
	codeAlreadyExists:      http.StatusConflict,
	codePermissionDenied:   http.StatusForbidden,
	codeResourceExhausted:  http.StatusTooManyRequests,
	codeFailedPrecondition: http.StatusBadRequest,
	codeInternal:           http.StatusInternalServerError,
	codeUnavailable:        http.StatusServiceUnavailable,
	codeUnauthenticated:    http.StatusUnauthorized,
}

// statusCodes is the Connect code of each status the agent's own errors
// (*apiv1.Error) carry; any other is internal.
var statusCodes = map[int]string{
	http.StatusBadRequest:            codeInvalidArgument,
	http.StatusUnauthorized:          codeUnauthenticated,
	http.StatusForbidden:             codePermissionDenied,
	http.StatusNotFound:              codeNotFound,
	http.StatusConflict:              codeFailedPrecondition,
	http.StatusRequestEntityTooLarge: codeResourceExhausted,
	http.StatusUnsupportedMediaType:  codeInvalidArgument,
	http.StatusInsufficientStorage:   codeResourceExhausted,
	http.StatusServiceUnavailable:    codeResourceExhausted, // the sandbox's limits, not the agent gone
}

// connectError is a Connect error: its code and message.
type connectError struct {
	Code    string `json:"code"`
	Message string `json:"message,omitempty"`
}

func (e *connectError) Error() string { return e.Code + ": " + e.Message }

// rpcError is a Connect error with a formatted message.
func rpcError(code, format string, args ...any) *connectError {
	return &connectError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// asConnect is err as a Connect error: a *connectError as it is, one of
// the agent's own by its status (statusCodes), a context's end as its
// kind, anything else internal.
func asConnect(err error) *connectError {
	if e, ok := errors.AsType[*connectError](err); ok {
		return e
	}
	if e, ok := errors.AsType[*apiv1.Error](err); ok {
		code, known := statusCodes[e.Code]
		if !known {
			code = codeInternal
		}
		return &connectError{Code: code, Message: e.Detail}
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &connectError{Code: codeDeadlineExceeded, Message: "Connect-Timeout-Ms elapsed"}
	case errors.Is(err, context.Canceled):
		return &connectError{Code: codeCanceled, Message: "canceled"}
	}
	return &connectError{Code: codeInternal, Message: err.Error()}
}

// unary serves a unary procedure: the request message decoded into a Req,
// fn's response message, or its error.
func unary[Req, Resp any](fn func(r *http.Request, req *Req) (*Resp, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !hasMediaType(r, "application/json") {
			writeJSON(w, http.StatusUnsupportedMediaType, unsupportedMedia(r, "application/json"))
			return
		}
		req := new(Req)
		data, err := readMessage(r.Body)
		if err == nil {
			err = decodeMessage(data, req)
		}
		var resp *Resp
		if err == nil {
			resp, err = fn(r, req)
		}
		if err != nil {
			e := asConnect(err)
			writeJSON(w, connectStatus[e.Code], e)
			return
		}
		writeJSON(w, http.StatusOK, resp)
	}
}

// serverStream serves a server-streaming procedure: the request message
// decoded into a Req, then fn, which sends the stream's messages on s; the
// stream ends with fn's error, or none. A client that leaves ends the
// request's context, and fn's error goes nowhere.
func serverStream[Req any](fn func(r *http.Request, req *Req, s *connectStream) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !hasMediaType(r, "application/connect+json") {
			writeJSON(w, http.StatusUnsupportedMediaType, unsupportedMedia(r, "application/connect+json"))
			return
		}
		s := newConnectStream(w)
		req := new(Req)
		err := readEnvelope(r.Body, req)
		if err == nil {
			err = fn(r, req, s)
		}
		s.end(err)
	}
}

// unsupportedMedia is the error of a request body that is not of the
// procedure's media type, answered with a 415.
func unsupportedMedia(r *http.Request, want string) *connectError {
	return rpcError(codeInvalidArgument, "the body must be %s, not %s", want, quote(r.Header.Get("Content-Type")))
}

// hasMediaType reports whether the request's body is of the media type
// (parameters such as charset aside).
func hasMediaType(r *http.Request, want string) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == want
}

// readMessage reads a whole request body, up to maxRPCBody.
func readMessage(body io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(body, maxRPCBody+1))
	if err != nil {
		return nil, rpcError(codeInvalidArgument, "reading the request: %v", err)
	}
	if len(data) > maxRPCBody {
		return nil, rpcError(codeResourceExhausted, "the request message is larger than %d bytes", maxRPCBody)
	}
	return data, nil
}

// readEnvelope reads a streaming request's one enveloped message into v.
func readEnvelope(body io.Reader, v any) error {
	data, err := readMessage(body)
	if err != nil {
		return err
	}
	if len(data) < 5 {
		return rpcError(codeInvalidArgument, "the request is not an enveloped message")
	}
	flags, size := data[0], binary.BigEndian.Uint32(data[1:5])
	switch {
	case flags&compressedFlag != 0:
		return rpcError(codeInternal, "compressed messages are not supported")
	case flags != 0 || int64(size) != int64(len(data)-5):
		return rpcError(codeInvalidArgument, "the request is not one enveloped message")
	}
	return decodeMessage(data[5:], v)
}

// decodeMessage reads a JSON message into v, ignoring unknown fields; an
// empty body is the empty message.
func decodeMessage(data []byte, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, v); err != nil {
		return rpcError(codeInvalidArgument, "the request message: %s", short(err.Error()))
	}
	return nil
}

// connectStream writes a server stream's answer: its headers, set when it
// is made, go out with the first flush, or with the end of the stream.
type connectStream struct {
	w   http.ResponseWriter
	buf []byte
}

func newConnectStream(w http.ResponseWriter) *connectStream {
	w.Header().Set("Content-Type", "application/connect+json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return &connectStream{w: w}
}

// send writes msg as one enveloped message, not flushed.
func (s *connectStream) send(msg any) error {
	data, err := json.Marshal(msg)
	if err != nil {
		return fmt.Errorf("encoding a message: %w", err)
	}
	return s.sendRaw(data)
}

// sendRaw writes an encoded message, not flushed.
func (s *connectStream) sendRaw(msg []byte) error {
	s.buf = appendEnvelope(s.buf[:0], 0, func(b []byte) []byte { return append(b, msg...) })
	_, err := s.w.Write(s.buf)
	return err
}

// flush sends what was written.
func (s *connectStream) flush() { flush(s.w) }

// end writes the end of the stream, with err's Connect error if not nil;
// it is sent as the handler returns.
func (s *connectStream) end(err error) {
	var end struct {
		Error *connectError `json:"error,omitempty"`
	}
	if err != nil {
		end.Error = asConnect(err)
	}
	data, _ := json.Marshal(end)
	s.buf = appendEnvelope(s.buf[:0], endStreamFlag, func(b []byte) []byte { return append(b, data...) })
	s.w.Write(s.buf)
}

// appendEnvelope appends an envelope of flags to buf, its message appended
// by msg.
func appendEnvelope(buf []byte, flags byte, msg func([]byte) []byte) []byte {
	at := len(buf)
	buf = msg(append(buf, flags, 0, 0, 0, 0))
	binary.BigEndian.PutUint32(buf[at+1:], uint32(len(buf)-at-5))
	return buf
}

// connectTimeout is the request's Connect-Timeout-Ms: 0 when none.
func connectTimeout(r *http.Request) (time.Duration, error) {
	v := r.Header.Get("Connect-Timeout-Ms")
	if v == "" {
		return 0, nil
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms < 0 || len(v) > 10 {
		return 0, rpcError(codeInvalidArgument, "Connect-Timeout-Ms %s is not a number of milliseconds", quote(v))
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// defaultKeepalive is how often a stream is pinged when the request does
// not say, as envd does.
const defaultKeepalive = 90 * time.Second

// keepaliveInterval is the request's Keepalive-Ping-Interval, in seconds,
// or defaultKeepalive.
func keepaliveInterval(r *http.Request) time.Duration {
	n, err := strconv.Atoi(r.Header.Get("Keepalive-Ping-Interval"))
	if err != nil || n <= 0 {
		return defaultKeepalive
	}
	return time.Duration(min(n, 3600)) * time.Second // no wrap past int64
}

// pbUint32 is a protobuf uint32, read from a JSON number or string; null
// leaves it unset.
type pbUint32 uint32

func (n *pbUint32) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		return nil
	}
	v, err := strconv.ParseUint(strings.Trim(string(data), `"`), 10, 32)
	if err != nil {
		return fmt.Errorf("%s is not a uint32", data)
	}
	*n = pbUint32(v)
	return nil
}

// pbBytes is protobuf bytes, read from base64 of either alphabet, padded
// or not.
type pbBytes []byte

func (b *pbBytes) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	s = strings.TrimRight(s, "=")
	if strings.ContainsAny(s, "-_") {
		s = strings.NewReplacer("-", "+", "_", "/").Replace(s)
	}
	v, err := base64.RawStdEncoding.DecodeString(s)
	if err != nil {
		return fmt.Errorf("bytes are not base64: %w", err)
	}
	*b = v
	return nil
}

// decodeEnum reads a protobuf enum from its name or number; an unknown
// name is 0, as protobuf's lenient readers take it.
func decodeEnum(data []byte, values map[string]int32) (int32, error) {
	var name string
	if json.Unmarshal(data, &name) == nil {
		return values[name], nil
	}
	var n int32
	if err := json.Unmarshal(data, &n); err != nil {
		return 0, fmt.Errorf("%s is not an enum name or number", data)
	}
	return n, nil
}
