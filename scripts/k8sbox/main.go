//go:build ignore

// Command box is the one binary of the image scripts/k8s.sh packs for its
// test cluster, where no registry is reachable. The image is tagged both as
// the pod sandbox's pause image and as sbx.test/box, with /pause and /box
// both this binary:
//
//   - as /pause (or /box with no arguments, or "box sleep"), it sleeps until
//     SIGTERM or SIGINT, reaping any child that ends, as Kubernetes' pause
//     does;
//   - "box uname" prints what uname -a would (gVisor's release ends -gvisor);
//   - "box dmesg" prints the kernel's log (gVisor's starts "Starting gVisor");
//   - "box cat FILE…" and "box echo ARG…" do what their names say;
//   - "box write FILE ARG…" writes what "box echo ARG…" prints to FILE.
//
// It is built static (CGO_ENABLED=0) with "go build" on this file; the
// build constraint keeps it out of the module's packages.
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
)

func main() {
	name, args := filepath.Base(os.Args[0]), os.Args[1:]
	if name == "box" && len(args) > 0 {
		name, args = args[0], args[1:]
	}
	switch name {
	case "pause", "box", "sleep":
		pause()
	case "uname":
		var u syscall.Utsname
		if err := syscall.Uname(&u); err != nil {
			fail(err)
		}
		fmt.Println(str(u.Sysname[:]), str(u.Nodename[:]), str(u.Release[:]), str(u.Version[:]), str(u.Machine[:]))
	case "dmesg":
		buf := make([]byte, 1<<16)
		n, err := syscall.Klogctl(3, buf) // SYSLOG_ACTION_READ_ALL
		if err != nil {
			fail(err)
		}
		os.Stdout.Write(buf[:n])
	case "cat":
		for _, f := range args {
			b, err := os.ReadFile(f)
			if err != nil {
				fail(err)
			}
			os.Stdout.Write(b)
		}
	case "echo":
		fmt.Println(strings.Join(args, " "))
	case "write":
		if len(args) == 0 {
			fail(fmt.Errorf("write: no file"))
		}
		if err := os.WriteFile(args[0], []byte(strings.Join(args[1:], " ")+"\n"), 0o644); err != nil {
			fail(err)
		}
	case "true":
	default:
		fmt.Fprintf(os.Stderr, "box: no command %q (pause, sleep, uname, dmesg, cat, echo, write, true)\n", name)
		os.Exit(127)
	}
}

// pause sleeps, reaping children, until SIGTERM or SIGINT.
func pause() {
	c := make(chan os.Signal, 8)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range c {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}

func str(b []int8) string {
	s := make([]byte, 0, len(b))
	for _, c := range b {
		s = append(s, byte(c))
	}
	return string(bytes.TrimRight(s, "\x00"))
}

func fail(err error) {
	io.WriteString(os.Stderr, "box: "+err.Error()+"\n")
	os.Exit(1)
}
