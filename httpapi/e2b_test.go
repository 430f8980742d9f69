package httpapi

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
)

// E2B's sandbox traffic opens with the sandbox's access token, a signed
// file URL (its path, operation, user and expiry bound by the signature),
// or, on the code interpreter's port but for its executions, the traffic
// token; nothing else.
func TestE2BCredentials(t *testing.T) {
	sb := sbx.Sandbox{ProviderSandboxID: "abc", AccessToken: "the-access-token-0123456789abcdef0123"}
	now := time.Unix(1_800_000_000, 0)
	sign := func(path, op, user, exp string) string {
		raw := path + ":" + op + ":" + user + ":" + sb.AccessToken
		if exp != "" {
			raw += ":" + exp
		}
		sum := sha256.Sum256([]byte(raw))
		return "v1_" + base64.RawStdEncoding.EncodeToString(sum[:])
	}
	fileURL := func(path, user, sig, exp string) string {
		q := url.Values{"path": {path}, "signature": {sig}}
		if user != "" {
			q.Set("username", user)
		}
		if exp != "" {
			q.Set("signature_expiration", exp)
		}
		return "/files?" + q.Encode()
	}
	later, earlier := strconv.FormatInt(now.Unix()+60, 10), strconv.FormatInt(now.Unix()-1, 10)
	for _, c := range []struct {
		name, method, target string
		port                 int
		header, value        string
		ok                   bool
	}{
		{"the access token", "POST", "/process.Process/Start", apiv1.AgentPort, apiv1.AccessTokenHeader, sb.AccessToken, true},
		{"a wrong access token", "POST", "/process.Process/Start", apiv1.AgentPort, apiv1.AccessTokenHeader, "nope", false},
		{"nothing", "POST", "/process.Process/Start", apiv1.AgentPort, "", "", false},
		{"a signed download", "GET", fileURL("/a.txt", "", sign("/a.txt", "read", "", ""), ""), apiv1.AgentPort, "", "", true},
		{"a signed upload as a user", "POST", fileURL("/a.txt", "user", sign("/a.txt", "write", "user", later), later), apiv1.AgentPort, "", "", true},
		{"a download's signature used to upload", "POST", fileURL("/a.txt", "", sign("/a.txt", "read", "", ""), ""), apiv1.AgentPort, "", "", false},
		{"a signature for another path", "GET", fileURL("/etc/shadow", "", sign("/a.txt", "read", "", ""), ""), apiv1.AgentPort, "", "", false},
		{"a signature for another user", "GET", fileURL("/a.txt", "root", sign("/a.txt", "read", "user", ""), ""), apiv1.AgentPort, "", "", false},
		{"an expired signature", "GET", fileURL("/a.txt", "", sign("/a.txt", "read", "", earlier), earlier), apiv1.AgentPort, "", "", false},
		{"an expiry moved", "GET", fileURL("/a.txt", "", sign("/a.txt", "read", "", earlier), later), apiv1.AgentPort, "", "", false},
		{"a signature off /files", "GET", "/process.Process/List?signature=" + sign("", "read", "", ""), apiv1.AgentPort, "", "", false},
		{"the traffic token for contexts", "GET", "/contexts", codeInterpreterPort, e2bTrafficHeader, sb.TrafficToken(), true},
		{"the traffic token to execute", "POST", "/execute", codeInterpreterPort, e2bTrafficHeader, sb.TrafficToken(), false},
		{"the traffic token at envd", "POST", "/process.Process/Start", apiv1.AgentPort, e2bTrafficHeader, sb.TrafficToken(), false},
	} {
		r := httptest.NewRequest(c.method, c.target, nil)
		if c.header != "" {
			r.Header.Set(c.header, c.value)
		}
		if err := e2bAllowed(r, c.port, sb, now); (err == nil) != c.ok {
			t.Errorf("%s: %v, want allowed %v", c.name, err, c.ok)
		}
	}
}
