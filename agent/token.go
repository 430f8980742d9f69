package agent

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"

	"github.com/sbxdev/sbx/apiv1"
)

// maxTokenLen bounds what ReadToken reads.
const maxTokenLen = 4 << 10

// ReadToken reads the access token from the open descriptor fd, up to the
// end of its first line (or of the file), and closes it. sbx hands the
// agent its token this way (a pipe that runsc passes into the sandbox), so
// that it is in no environment, argv or file that code in the sandbox could
// read, and no bundle on the host holds it. The writer keeps its end open
// until the agent closes this one, which tells it the token was taken.
func ReadToken(fd int) (string, error) {
	f := os.NewFile(uintptr(fd), "token")
	if f == nil {
		return "", fmt.Errorf("agent: descriptor %d is not open", fd)
	}
	defer f.Close()
	var data []byte
	b := make([]byte, 1)
	for len(data) <= maxTokenLen {
		n, err := f.Read(b)
		if n == 1 && b[0] == '\n' {
			break
		}
		data = append(data, b[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("agent: reading the access token from descriptor %d: %w", fd, err)
		}
	}
	if len(data) > maxTokenLen {
		return "", fmt.Errorf("agent: descriptor %d holds more than a token", fd)
	}
	token := string(bytes.TrimSpace(data))
	clear(data)
	if token == "" {
		return "", errors.New("agent: descriptor " + fmt.Sprint(fd) + " held no access token")
	}
	return token, nil
}

// tokenMatches compares in constant time: hashing both sides first hides
// the token's length too.
// The next token, when one was offered, matches too, and its first use
// makes it the only token.
func (a *Agent) tokenMatches(got string) bool {
	sum := sha256.Sum256([]byte(got))
	if got == "" {
		return false
	}
	if subtle.ConstantTimeCompare(sum[:], a.token.Load()[:]) == 1 {
		return true
	}
	next := a.next.Load()
	if next == nil || subtle.ConstantTimeCompare(sum[:], next[:]) != 1 {
		return false
	}
	if a.next.CompareAndSwap(next, nil) {
		a.token.Store(next)
	}
	return true
}

// setToken keeps only the token's hash.
func (a *Agent) setToken(token string) {
	sum := sha256.Sum256([]byte(token))
	a.token.Store(&sum)
}

// rotateToken is POST /token. Only sbx serve rotates the token, from outside
// the sandbox: a request from one of the sandbox's own addresses (loopback,
// or any address of its interfaces) is refused, whatever token it carries,
// so code in the sandbox that got hold of the token still cannot lock its
// owner out.
func (a *Agent) rotateToken(w http.ResponseWriter, r *http.Request) error {
	if !a.rotator(r) {
		return apiError(http.StatusForbidden, "the access token is rotated by sbx serve only, never from inside the sandbox")
	}
	var req apiv1.TokenRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if len(req.Token) < minTokenLen {
		return invalid("the token must be at least %d characters", minTokenLen)
	}
	for k, v := range req.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.Contains(v, "\x00") || k == TokenEnv {
			return invalidField("env", "env: %s is not a valid variable", quote(k))
		}
	}
	if req.Next != "" && len(req.Next) < minTokenLen {
		return invalidField("next", "the next token must be at least %d characters", minTokenLen)
	}
	if req.Env != nil || req.Unset != nil {
		a.replaceEnv(req.Env, req.Unset)
	}
	a.setToken(req.Token)
	a.next.Store(nil)
	if req.Next != "" {
		sum := sha256.Sum256([]byte(req.Next))
		a.next.Store(&sum)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// fromHere reports whether a request comes from an address of the machine
// the agent runs on (in a sandbox: the sandbox itself). An address it cannot
// read counts as here.
func (a *Agent) fromHere(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return true
	}
	ip := net.ParseIP(host)
	if ip == nil || ip.IsLoopback() || ip.IsUnspecified() {
		return true
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		a.log.Warn("reading the sandbox's addresses", "err", err)
		return true
	}
	for _, addr := range addrs {
		if n, ok := addr.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// reopenStdin puts /dev/null on descriptor 0 once the token was read from
// it and it was closed, so that nothing the agent opens later takes 0.
func reopenStdin() error {
	fd, err := syscall.Open(os.DevNull, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil || fd == 0 { // 0 was free: /dev/null took it, and stays
		return err
	}
	defer syscall.Close(fd)
	return syscall.Dup3(fd, 0, 0)
}
