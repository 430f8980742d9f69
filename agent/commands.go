package agent

import (
	"net/http"
	"strconv"
	"strings"
	"syscall"

	"github.com/sbxdev/sbx/apiv1"
	"golang.org/x/sys/unix"
)

// The /commands routes: thin handlers over launch, the table and command.

func (a *Agent) postCommand(w http.ResponseWriter, r *http.Request) error {
	var req apiv1.StartCommandRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	c, err := a.startCommand(req)
	if err != nil {
		return err
	}
	if req.Background {
		writeJSON(w, http.StatusCreated, c.snapshot())
		return nil
	}
	a.streamEvents(w, r, c)
	return nil
}

func (a *Agent) listCommands(w http.ResponseWriter, _ *http.Request) error {
	list := apiv1.CommandList{Items: []apiv1.CommandInfo{}}
	for _, c := range a.procs.all() {
		list.Items = append(list.Items, c.snapshot())
	}
	writeJSON(w, http.StatusOK, list)
	return nil
}

func (a *Agent) getCommand(w http.ResponseWriter, r *http.Request) error {
	c, err := a.procs.find(r.PathValue("ref"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, c.snapshot())
	return nil
}

func (a *Agent) streamCommand(w http.ResponseWriter, r *http.Request) error {
	c, err := a.procs.find(r.PathValue("ref"))
	if err != nil {
		return err
	}
	a.streamEvents(w, r, c)
	return nil
}

func (a *Agent) writeStdin(w http.ResponseWriter, r *http.Request) error {
	c, err := a.procs.find(r.PathValue("ref"))
	if err != nil {
		return err
	}
	if err := c.writeStdin(r.Body); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *Agent) closeStdin(w http.ResponseWriter, r *http.Request) error {
	c, err := a.procs.find(r.PathValue("ref"))
	if err != nil {
		return err
	}
	if err := c.closeStdin(); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *Agent) signalCommand(w http.ResponseWriter, r *http.Request) error {
	c, err := a.procs.find(r.PathValue("ref"))
	if err != nil {
		return err
	}
	var req apiv1.SignalRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	sig, err := parseSignal(req.Signal)
	if err != nil {
		return err
	}
	if err := c.signal(sig); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, c.snapshot())
	return nil
}

// killCommand kills the command's process group and answers once it has
// exited (or the client gives up waiting).
func (a *Agent) killCommand(w http.ResponseWriter, r *http.Request) error {
	c, err := a.procs.find(r.PathValue("ref"))
	if err != nil {
		return err
	}
	c.kill("killed")
	select {
	case <-c.exited:
	case <-r.Context().Done():
		return nil
	}
	writeJSON(w, http.StatusOK, c.snapshot())
	return nil
}

// parseSignal reads a signal name, with or without SIG, or number.
func parseSignal(s string) (syscall.Signal, error) {
	if n, err := strconv.Atoi(s); err == nil && n > 0 && n < 65 {
		return syscall.Signal(n), nil
	}
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if sig := unix.SignalNum(name); sig != 0 {
		return sig, nil
	}
	return 0, invalidField("signal", "signal %s is not a signal name (TERM, INT, HUP, KILL, USR1, …) or number", quote(s))
}
