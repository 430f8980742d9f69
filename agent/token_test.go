package agent_test

import (
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/sbxdev/sbx/agent"
)

// The token is read from a descriptor to its end, which is then closed.
func TestReadToken(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	w.WriteString(token + "\n")
	w.Close()
	fd, err := syscall.Dup(int(r.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if got, err := agent.ReadToken(fd); err != nil || got != token {
		t.Fatalf("ReadToken: %q %v", got, err)
	}
	if err := syscall.Fstat(fd, &syscall.Stat_t{}); err != syscall.EBADF {
		t.Errorf("the descriptor is still open: %v", err)
	}
	empty, w2, _ := os.Pipe()
	w2.Close()
	efd, _ := syscall.Dup(int(empty.Fd()))
	empty.Close()
	if _, err := agent.ReadToken(efd); err == nil || !strings.Contains(err.Error(), "no access token") {
		t.Errorf("an empty pipe: %v", err)
	}
}
