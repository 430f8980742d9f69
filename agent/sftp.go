package agent

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/pkg/sftp"
	"github.com/sbxdev/sbx/apiv1"
)

// The agent's own SFTP server: a command whose argv is just
// apiv1.SFTPServer runs this binary (the agent's, bind-mounted read-only
// into the sandbox) in its place, which serves SFTP (github.com/pkg/sftp)
// on its stdin and stdout and exits when its stdin ends. It runs as the
// command's user, in the command's working directory, like any command:
// what SSH's sftp subsystem (sftp, and scp from OpenSSH 9 on) gets, with
// the files' owners and permissions the sandbox user's, not root's.

func init() {
	if len(os.Args) == 1 && os.Args[0] == apiv1.SFTPServer {
		os.Exit(serveSFTP(os.Stdin, os.Stdout, os.Stderr))
	}
}

// serveSFTP serves one SFTP session on in and out until in ends, and
// answers the exit code: 0 when the client ended it.
func serveSFTP(in io.Reader, out io.WriteCloser, errOut io.Writer) int {
	s, err := sftp.NewServer(struct {
		io.Reader
		io.WriteCloser
	}{in, out})
	if err == nil {
		err = s.Serve()
		s.Close()
	}
	if err != nil && !errors.Is(err, io.EOF) {
		fmt.Fprintf(errOut, "sbx: sftp server: %v\n", err)
		return 1
	}
	return 0
}

// self is this binary, which a command named apiv1.SFTPServer runs; ""
// when it cannot be found.
var self = func() string {
	p, err := os.Executable()
	if err != nil {
		return ""
	}
	return p
}()
