package e2b

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// envd is a client of one sandbox's envd: Connect's protocol with its JSON
// codec (unary calls and server streams) for the process and filesystem
// services, and /files for contents. It is reached at the sandbox's
// domain, or at Config.SandboxURL with headers naming the sandbox; every
// call carries the sandbox's envd access token, and the user a call acts
// as in Basic authentication, as E2B's SDKs send them.
type envd struct {
	http *http.Client
	id   string

	mu    sync.Mutex
	base  string // envd's URL
	token string
}

func (p *Provider) newEnvd(sb sandbox) *envd {
	domain := p.cfg.Domain
	if sb.Domain != nil && *sb.Domain != "" {
		domain = *sb.Domain
	}
	scheme := "https" // E2B's; an installation whose API is plain HTTP serves envd so too
	if strings.HasPrefix(p.cfg.APIURL, "http://") {
		scheme = "http"
	}
	base := fmt.Sprintf("%s://%d-%s.%s", scheme, envdPort, sb.SandboxID, domain)
	if p.cfg.SandboxURL != "" {
		base = strings.TrimRight(p.cfg.SandboxURL, "/")
	}
	return &envd{http: p.http, id: sb.SandboxID, base: base, token: sb.EnvdAccessToken}
}

// set takes another answer's way to the sandbox (a resume may move it).
func (e *envd) set(o *envd) {
	e.mu.Lock()
	e.base, e.token = o.base, o.token
	e.mu.Unlock()
}

// request is a call to envd at path, as user ("" for envd's default).
func (e *envd) request(ctx context.Context, method, path, user string, body io.Reader) (*http.Request, error) {
	e.mu.Lock()
	base, token := e.base, e.token
	e.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, method, base+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-Access-Token", token)
	req.Header.Set("E2b-Sandbox-Id", e.id)
	req.Header.Set("E2b-Sandbox-Port", strconv.Itoa(envdPort))
	if user != "" {
		req.SetBasicAuth(user, "")
	}
	return req, nil
}

// rpcError is an error envd answered, with Connect's code (or, from
// /files, the HTTP status's).
type rpcError struct {
	Code    string
	Message string
}

func (e *rpcError) Error() string { return e.Code + ": " + e.Message }

// connectCodes is the Connect code of the HTTP statuses /files answers.
var connectCodes = map[int]string{
	http.StatusBadRequest: "invalid_argument", http.StatusUnauthorized: "unauthenticated", http.StatusForbidden: "permission_denied",
	http.StatusNotFound: "not_found", http.StatusConflict: "already_exists", http.StatusRequestEntityTooLarge: "resource_exhausted",
	http.StatusInsufficientStorage: "resource_exhausted", http.StatusTooManyRequests: "resource_exhausted",
	http.StatusBadGateway: "unavailable", http.StatusServiceUnavailable: "unavailable", http.StatusGatewayTimeout: "unavailable",
}

// answerError reads a failed answer's {"code","message"}: Connect's (code
// a string) or /files' (code a status).
func answerError(resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var body struct {
		Code    json.RawMessage `json:"code"`
		Message string          `json:"message"`
	}
	e := &rpcError{Code: connectCodes[resp.StatusCode], Message: strings.TrimSpace(string(data))}
	if e.Code == "" {
		e.Code = "internal"
	}
	if json.Unmarshal(data, &body) == nil && body.Message != "" {
		e.Message = body.Message
		var code string
		if json.Unmarshal(body.Code, &code) == nil && code != "" {
			e.Code = code
		}
	}
	if e.Message == "" {
		e.Message = resp.Status
	}
	return e
}

// unreachable is the error of a call that got no answer.
func (e *envd) unreachable(err error) error {
	return &rpcError{Code: "unavailable", Message: fmt.Sprintf("envd of sandbox %s does not answer: %v", e.id, err)}
}

// unary calls procedure (e.g. "process.Process/List") with in, decoding
// its answer into out.
func (e *envd) unary(ctx context.Context, procedure, user string, in, out any) error {
	data, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := e.request(ctx, http.MethodPost, "/"+procedure, user, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Connect-Protocol-Version", "1")
	resp, err := e.http.Do(req)
	if err != nil {
		return e.unreachable(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return answerError(resp)
	}
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// stream calls a server-streaming procedure with in; timeout, when not
// zero, is Connect-Timeout-Ms (a process's lifetime, to envd).
func (e *envd) stream(ctx context.Context, procedure, user string, in any, timeout time.Duration) (*envdStream, error) {
	data, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	frame := make([]byte, 5+len(data))
	binary.BigEndian.PutUint32(frame[1:5], uint32(len(data)))
	copy(frame[5:], data)
	req, err := e.request(ctx, http.MethodPost, "/"+procedure, user, bytes.NewReader(frame))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/connect+json")
	req.Header.Set("Connect-Protocol-Version", "1")
	if timeout > 0 {
		req.Header.Set("Connect-Timeout-Ms", strconv.FormatInt(timeout.Milliseconds(), 10))
	}
	resp, err := e.http.Do(req)
	if err != nil {
		return nil, e.unreachable(err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, answerError(resp)
	}
	return &envdStream{body: resp.Body, r: bufio.NewReader(resp.Body)}, nil
}

// envdStream is the answer of a server stream, message by message.
type envdStream struct {
	body io.Closer
	r    *bufio.Reader
}

// Next returns the next message; io.EOF at a clean end, the stream's error
// at another.
func (s *envdStream) Next() (json.RawMessage, error) {
	var head [5]byte
	if _, err := io.ReadFull(s.r, head[:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // a stream ends with its end message
		}
		return nil, err
	}
	n := binary.BigEndian.Uint32(head[1:])
	if n > 64<<20 {
		return nil, fmt.Errorf("envd sent a message of %d bytes", n)
	}
	msg := make([]byte, n)
	if _, err := io.ReadFull(s.r, msg); err != nil {
		return nil, err
	}
	if head[0]&0x02 == 0 {
		return msg, nil
	}
	var end struct {
		Error *rpcError `json:"error"`
	}
	if err := json.Unmarshal(msg, &end); err != nil {
		return nil, err
	}
	if end.Error != nil {
		return nil, end.Error
	}
	return nil, io.EOF
}

func (e *rpcError) UnmarshalJSON(data []byte) error {
	var v struct{ Code, Message string }
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	e.Code, e.Message = v.Code, v.Message
	return nil
}

// Close ends the stream.
func (s *envdStream) Close() error { return s.body.Close() }

// download opens the file at path.
func (e *envd) download(ctx context.Context, path, user string) (*http.Response, error) {
	req, err := e.request(ctx, http.MethodGet, "/files?"+url.Values{"path": {path}, "username": {user}}.Encode(), "", nil)
	if err != nil {
		return nil, err
	}
	resp, err := e.http.Do(req)
	if err != nil {
		return nil, e.unreachable(err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, answerError(resp)
	}
	return resp, nil
}

// upload writes body to path as a part of a multipart form, as the SDKs
// upload (the part's filename is the path).
func (e *envd) upload(ctx context.Context, path, user string, body io.Reader) error {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		part, err := mw.CreateFormFile("file", path)
		if err == nil {
			_, err = io.Copy(part, body)
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	req, err := e.request(ctx, http.MethodPost, "/files?"+url.Values{"path": {path}, "username": {user}}.Encode(), "", pr)
	if err != nil {
		pr.Close()
		return err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := e.http.Do(req)
	if err != nil {
		return e.unreachable(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return answerError(resp)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// b64 is a protobuf bytes field in JSON.
func b64(p []byte) string { return base64.StdEncoding.EncodeToString(p) }
