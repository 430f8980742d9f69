package docker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The Engine API versions this client speaks: it asks the daemon for its
// own (GET /version) and uses the lower of that and maxAPI; a daemon
// older than minAPI is refused (stats' one-shot needs 1.41).
const (
	minAPI = "1.41"
	maxAPI = "1.45"
)

// Engine speaks the Docker Engine API as plain HTTP over the daemon's
// Unix socket (unix://PATH) or TCP (tcp://HOST:PORT), with the API
// version negotiated once the daemon answers.
type Engine struct {
	host string // as configured, for messages
	http *http.Client

	mu      sync.Mutex
	version string // negotiated; "" until the daemon has answered
}

// NewEngine returns a client of the daemon at host: the provider's, and
// sbx bench's for its docker run baseline, so that both speak to the daemon
// alike.
func NewEngine(host string) (*Engine, error) {
	u, err := url.Parse(host)
	if err != nil {
		return nil, fmt.Errorf("docker host %q: %w", host, err)
	}
	var dial func(ctx context.Context) (net.Conn, error)
	var d net.Dialer
	switch u.Scheme {
	case "unix":
		path := u.Path
		if path == "" {
			path = u.Opaque
		}
		if path == "" {
			return nil, fmt.Errorf("docker host %q names no socket", host)
		}
		dial = func(ctx context.Context) (net.Conn, error) { return d.DialContext(ctx, "unix", path) }
	case "tcp", "http":
		if u.Host == "" {
			return nil, fmt.Errorf("docker host %q names no address", host)
		}
		dial = func(ctx context.Context) (net.Conn, error) { return d.DialContext(ctx, "tcp", u.Host) }
	default:
		return nil, fmt.Errorf("docker host %q: want unix:///path/to/docker.sock or tcp://host:port", host)
	}
	tr := &http.Transport{
		DialContext:         func(ctx context.Context, _, _ string) (net.Conn, error) { return dial(ctx) },
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
	return &Engine{host: host, http: &http.Client{Transport: tr}}, nil
}

// APIError is an error answer of the daemon: its status and message.
type APIError struct {
	Status  int
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("docker: %s (HTTP %d)", e.Message, e.Status)
}

// IsStatus reports whether err is the daemon's answer with status code.
func IsStatus(err error, code int) bool {
	var e *APIError
	return errors.As(err, &e) && e.Status == code
}

// negotiate finds the API version to speak, once the daemon answers.
func (e *Engine) negotiate(ctx context.Context) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.version != "" {
		return e.version, nil
	}
	var v struct {
		APIVersion    string `json:"ApiVersion"`
		MinAPIVersion string `json:"MinAPIVersion"`
		Version       string `json:"Version"`
	}
	if err := e.raw(ctx, "GET", "/version", nil, nil, &v); err != nil {
		return "", err
	}
	if v.APIVersion == "" || apiLess(v.APIVersion, minAPI) {
		return "", fmt.Errorf("the Docker daemon at %s (version %s) speaks API %s; sbx needs %s or later", e.host, v.Version, v.APIVersion, minAPI)
	}
	use := v.APIVersion
	if apiLess(maxAPI, use) {
		use = maxAPI
	}
	if v.MinAPIVersion != "" && apiLess(use, v.MinAPIVersion) {
		return "", fmt.Errorf("the Docker daemon at %s speaks API %s to %s; sbx speaks %s to %s", e.host, v.MinAPIVersion, v.APIVersion, minAPI, maxAPI)
	}
	e.version = use
	return use, nil
}

// apiLess compares API versions "1.41" numerically.
func apiLess(a, b string) bool {
	pa, pb := strings.SplitN(a, ".", 2), strings.SplitN(b, ".", 2)
	for i := range 2 {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}

// Request sends a request of the negotiated version: path is the
// version-less path ("/containers/json").
func (e *Engine) Request(ctx context.Context, method, path string, query url.Values, body io.Reader, hdr http.Header) (*http.Response, error) {
	v, err := e.negotiate(ctx)
	if err != nil {
		return nil, err
	}
	return e.send(ctx, method, "/v"+v+path, query, body, hdr)
}

func (e *Engine) send(ctx context.Context, method, path string, query url.Values, body io.Reader, hdr http.Header) (*http.Response, error) {
	u := "http://docker" + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	resp, err := e.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("the Docker daemon at %s: %w", e.host, err)
	}
	if resp.StatusCode >= 400 {
		defer resp.Body.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		var m struct{ Message string }
		if json.Unmarshal(data, &m) != nil || m.Message == "" {
			m.Message = strings.TrimSpace(string(data))
		}
		return nil, &APIError{Status: resp.StatusCode, Message: m.Message}
	}
	return resp, nil
}

// raw is send of a JSON body (nil: none) whose JSON answer goes into out
// (nil: read and dropped), without the version prefix.
func (e *Engine) raw(ctx context.Context, method, path string, query url.Values, in, out any) error {
	resp, err := e.send(ctx, method, path, query, jsonBody(in), jsonHeader(in))
	return decode(resp, err, out)
}

// Call is raw with the negotiated version: a JSON body (nil: none) whose
// JSON answer goes into out (nil: read and dropped).
func (e *Engine) Call(ctx context.Context, method, path string, query url.Values, in, out any) error {
	resp, err := e.Request(ctx, method, path, query, jsonBody(in), jsonHeader(in))
	return decode(resp, err, out)
}

// decode reads a JSON answer into out (nil: read and dropped).
func decode(resp *http.Response, err error, out any) error {
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func jsonBody(in any) io.Reader {
	if in == nil {
		return nil
	}
	data, err := json.Marshal(in)
	if err != nil {
		panic(err) // the provider's own types
	}
	return bytes.NewReader(data)
}

func jsonHeader(in any) http.Header {
	if in == nil {
		return nil
	}
	return http.Header{"Content-Type": {"application/json"}}
}

// ping is GET /_ping.
func (e *Engine) ping(ctx context.Context) error {
	return e.raw(ctx, "GET", "/_ping", nil, nil, nil)
}

// attachStdin attaches to a created container's stdin (the connection
// taken over by the daemon: 101 Switching Protocols), for the caller to
// write to and close.
func (e *Engine) attachStdin(ctx context.Context, id string) (io.WriteCloser, error) {
	q := url.Values{"stream": {"1"}, "stdin": {"1"}}
	resp, err := e.Request(ctx, "POST", "/containers/"+url.PathEscape(id)+"/attach", q, nil,
		http.Header{"Connection": {"Upgrade"}, "Upgrade": {"tcp"}})
	if err != nil {
		return nil, err
	}
	rw, ok := resp.Body.(io.ReadWriteCloser)
	if resp.StatusCode != http.StatusSwitchingProtocols || !ok {
		resp.Body.Close()
		return nil, fmt.Errorf("docker: attaching to container %s answered %s, not a stream", id, resp.Status)
	}
	return rw, nil
}

// demux splits the daemon's multiplexed stream (a TTY-less container's
// logs: 8-byte frames of stream, 0, 0, 0 and a big-endian size) into
// lines, each with its stream's name.
func demux(r io.Reader, line func(stream, text string)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var hdr [8]byte
	partial := map[byte]*strings.Builder{1: {}, 2: {}}
	names := map[byte]string{1: "stdout", 2: "stderr"}
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			for k, b := range partial {
				if b.Len() > 0 {
					line(names[k], b.String())
				}
			}
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return nil
			}
			return err
		}
		n := binary.BigEndian.Uint32(hdr[4:])
		buf := make([]byte, n)
		if _, err := io.ReadFull(br, buf); err != nil {
			return err
		}
		s := hdr[0]
		b, ok := partial[s]
		if !ok {
			continue // stdin (0) or something unknown
		}
		for len(buf) > 0 {
			i := bytes.IndexByte(buf, '\n')
			if i < 0 {
				b.Write(buf)
				break
			}
			b.Write(buf[:i])
			line(names[s], b.String())
			b.Reset()
			buf = buf[i+1:]
		}
	}
}
