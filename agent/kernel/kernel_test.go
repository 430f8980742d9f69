package kernel

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx/internal/testenv"
)

// start starts a real ipykernel of this host's Python (Debian's
// python3-ipykernel), ended with t.
func start(t *testing.T) *Kernel {
	t.Helper()
	if exec.Command("/usr/bin/python3", "-c", "import ipykernel").Run() != nil {
		testenv.Missing(t, "python3-ipykernel (apt-get install python3-ipykernel)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	k, err := Start(ctx, Spec{Argv: []string{"/usr/bin/python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"}, Dir: t.TempDir(),
		Env: append(os.Environ(), "HOME="+t.TempDir())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	return k
}

func run(t *testing.T, k *Kernel, timeout time.Duration, code string) ([]Output, Reply, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var outs []Output
	r, err := k.Execute(ctx, code, func(o Output) error { outs = append(outs, o); return nil })
	return outs, r, err
}

// A real kernel keeps state between executions, streams output, answers
// the last expression's value, names an error, and lives on after an
// interrupt.
func TestKernelExecutes(t *testing.T) {
	k := start(t)
	if _, r, err := run(t, k, time.Minute, "x = 41"); err != nil || r.Status != "ok" || r.ExecutionCount != 1 {
		t.Fatalf("x = 41: %+v %v", r, err)
	}
	outs, r, err := run(t, k, time.Minute, "print('hi'); x + 1")
	if err != nil || r.ExecutionCount != 2 || len(outs) != 2 || outs[0].Text != "hi\n" || !outs[1].Main || outs[1].Data["text/plain"] != "42" {
		t.Fatalf("x + 1: %+v %+v %v", outs, r, err)
	}
	outs, r, _ = run(t, k, time.Minute, "1/0")
	if r.Status != "error" || len(outs) != 1 || outs[0].Name != "ZeroDivisionError" || len(outs[0].Traceback) == 0 {
		t.Fatalf("1/0: %+v %+v", outs, r)
	}
	_, _, err = run(t, k, 2*time.Second, "while True: pass")
	if err != nil {
		t.Logf("the interrupted execution: %v", err)
	}
	if outs, _, err := run(t, k, time.Minute, "x"); err != nil || len(outs) != 1 || outs[0].Data["text/plain"] != "41" {
		t.Fatalf("after an interrupt: %+v %v", outs, err)
	}
	if outs, _, _ := run(t, k, time.Minute, "import matplotlib.pyplot as plt\nplt.plot([1, 2])"); !hasPNG(outs) {
		t.Errorf("a plot: %+v", outs)
	}
}

func hasPNG(outs []Output) bool {
	for _, o := range outs {
		if s, ok := o.Data["image/png"].(string); ok && strings.HasPrefix(s, "iVBOR") {
			return true
		}
	}
	return false
}

// An execution sent right after an error runs: the kernel is not asked to
// stop on errors, which would abort it (ipykernel dropped about one in ten
// such executions with stop_on_error).
func TestKernelRunsWhatFollowsAnError(t *testing.T) {
	k := start(t)
	for i := range 50 {
		if _, r, _ := run(t, k, time.Minute, "1/0"); r.Status != "error" {
			t.Fatalf("1/0: %+v", r)
		}
		if _, r, err := run(t, k, time.Minute, "1+1"); err != nil || r.Status != "ok" {
			t.Fatalf("1+1 after an error, run %d: %+v %v", i, r, err)
		}
	}
}
