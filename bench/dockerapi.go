package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

// dockerAPI is the docker contender's baseline client: the Docker Engine
// API as plain HTTP, the calls the docker CLI makes, without the CLI's own
// start (a process, its config, the version negotiation) in the times.
type dockerAPI struct {
	http *http.Client
}

// dockerAPIVersion is the version every call names: the docker provider's
// oldest.
const dockerAPIVersion = "v1.41"

// newDockerAPI returns a client of the daemon at host (unix:///path or
// tcp://host:port).
func newDockerAPI(host string) (*dockerAPI, error) {
	u, err := url.Parse(host)
	if err != nil {
		return nil, fmt.Errorf("docker host %q: %w", host, err)
	}
	network, addr := "unix", u.Path
	if u.Scheme == "tcp" || u.Scheme == "http" {
		network, addr = "tcp", u.Host
	} else if u.Scheme != "unix" || addr == "" {
		return nil, fmt.Errorf("docker host %q: want unix:///path/to/docker.sock or tcp://host:port", host)
	}
	var d net.Dialer
	tr := &http.Transport{
		DialContext:         func(ctx context.Context, _, _ string) (net.Conn, error) { return d.DialContext(ctx, network, addr) },
		MaxIdleConnsPerHost: 4, IdleConnTimeout: 30 * time.Second, DisableCompression: true,
	}
	return &dockerAPI{http: &http.Client{Transport: tr}}, nil
}

// apiStatusError is an answer of the daemon other than 2xx.
type apiStatusError struct {
	status int
	msg    string
}

func (e *apiStatusError) Error() string { return fmt.Sprintf("docker: %d: %s", e.status, e.msg) }

func isAPIStatus(err error, status int) bool {
	var e *apiStatusError
	return errors.As(err, &e) && e.status == status
}

// stream copies GET path?q's answer into w.
func (a *dockerAPI) stream(ctx context.Context, path string, q url.Values, w io.Writer) error {
	req, err := http.NewRequestWithContext(ctx, "GET", "http://docker/"+dockerAPIVersion+path+"?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(w, io.LimitReader(resp.Body, 4096))
	return err
}

// call sends method path?q with body as JSON and decodes the answer into out
// (when not nil).
func (a *dockerAPI) call(ctx context.Context, method, path string, q url.Values, body, out any) error {
	var r io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(data)
	}
	u := "http://docker/" + dockerAPIVersion + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, r)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		var m struct{ Message string }
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if json.Unmarshal(data, &m) != nil || m.Message == "" {
			m.Message = string(data)
		}
		return &apiStatusError{resp.StatusCode, m.Message}
	}
	if out != nil {
		return json.NewDecoder(resp.Body).Decode(out)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}
