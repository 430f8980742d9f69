package agent_test

import (
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sbxdev/sbx/internal/testenv"
)

// Writes run as the user they are for: a symbolic link that user planted
// does not lead the agent (root) to write where the user could not, and
// what a write makes belongs to the user.
func TestWritesRunAsTheirUser(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Missing(t, "root, to act as another user")
	}
	e := newEnv(t)
	const nobody = 65534
	work, locked := filepath.Join(e.dir, "work"), filepath.Join(e.dir, "locked")
	for _, d := range []string{work, locked} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(e.dir, 0o755)
	os.Chmod(filepath.Dir(e.dir), 0o755) // t.TempDir makes both 0700
	if err := os.Chown(work, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	// What code running as nobody could plant: a link into a directory of root's.
	if err := os.Symlink(locked, filepath.Join(work, "d")); err != nil {
		t.Fatal(err)
	}
	put := func(path string) int {
		resp := e.request(e.ctx, "PUT", "/files?user=65534&path="+url.QueryEscape(path), strings.NewReader("echo owned\n"))
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	if got := put(filepath.Join(work, "d", "evil.sh")); got != http.StatusForbidden {
		t.Errorf("a write through the planted link: %d, want 403", got)
	}
	if _, err := os.Stat(filepath.Join(locked, "evil.sh")); !os.IsNotExist(err) {
		t.Fatalf("root wrote through the link the user planted: %v", err)
	}
	if got := put(filepath.Join(work, "new", "ok.txt")); got != http.StatusOK {
		t.Fatalf("a write where the user may: %d", got)
	}
	for _, p := range []string{filepath.Join(work, "new"), filepath.Join(work, "new", "ok.txt")} {
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil || st.Uid != nobody {
			t.Errorf("%s belongs to %d (%v), want the user", p, st.Uid, err)
		}
	}
	resp := e.request(e.ctx, "POST", "/files/mkdir?user=65534", map[string]string{"path": filepath.Join(work, "d", "made")})
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a mkdir through the planted link: %d, want 403", resp.StatusCode)
	}
	// The agent's own identity is back on every thread.
	if os.Geteuid() != 0 || os.Getegid() != 0 {
		t.Fatalf("the agent is left as %d:%d", os.Geteuid(), os.Getegid())
	}
}
