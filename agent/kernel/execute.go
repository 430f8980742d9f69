package kernel

import (
	"context"
	"encoding/json"
	"time"
)

// Output is one thing an execution gives, as it comes: text on stdout or
// stderr; a result (a MIME bundle: the value of the last expression, Main,
// or anything displayed, such as a figure); or an error.
type Output struct {
	Type      string         // stdout, stderr, result or error
	Text      string         // stdout, stderr
	Data      map[string]any // result: MIME type → data (text, base64 for images, JSON)
	Main      bool           // result: the value of the last expression
	Name      string         // error: its name, e.g. ZeroDivisionError
	Value     string         // error: its message
	Traceback []string       // error
}

// Reply is how an execution ended: its execution count and whether it
// finished (ok), failed (error) or was interrupted (aborted, or error with
// KeyboardInterrupt).
type Reply struct {
	Status         string
	ExecutionCount int
}

// interruptGrace bounds how long an execution whose ctx ended waits for the
// interrupted kernel to go idle.
const interruptGrace = 10 * time.Second

// Execute runs code in the kernel, one execution at a time, giving emit
// each output as it comes, and answers how it ended. When ctx ends first
// (a timeout), the kernel is interrupted and Execute waits for it to go
// idle: its state lives on.
func (k *Kernel) Execute(ctx context.Context, code string, emit func(Output) error) (Reply, error) {
	k.run.Lock()
	defer k.run.Unlock()
	id, events := k.expect()
	defer k.stopListening()
	// Not stop_on_error: with it, ipykernel aborts what it is sent shortly
	// after an error (an interrupt's KeyboardInterrupt too), and it protects
	// no queue here, where one execution runs at a time.
	if err := k.send("execute_request", id, map[string]any{"code": code, "silent": false, "store_history": true,
		"user_expressions": map[string]any{}, "allow_stdin": false, "stop_on_error": false}); err != nil {
		return Reply{}, err
	}
	done := ctx.Done()
	var grace <-chan time.Time
	var emitErr error
	for {
		select {
		case m := <-events:
			if out, ok := outputOf(m); ok && emitErr == nil {
				emitErr = emit(out)
			}
			if m.Header.MsgType == "status" {
				var st struct {
					State string `json:"execution_state"`
				}
				if json.Unmarshal(m.Content, &st) == nil && st.State == "idle" {
					return k.executeReply(id)
				}
			}
		case <-done:
			k.Interrupt()
			done, grace = nil, time.After(interruptGrace)
		case <-grace:
			return Reply{}, ctx.Err()
		case <-k.exited:
			return Reply{}, &ExitedError{Err: k.err}
		}
	}
}

// executeReply reads the execute request's reply, which the kernel sends
// before it goes idle.
func (k *Kernel) executeReply(id string) (Reply, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, err := k.reply(ctx, id)
	if err != nil {
		return Reply{}, err
	}
	var r struct {
		Status string `json:"status"`
		Count  int    `json:"execution_count"`
	}
	err = json.Unmarshal(m.Content, &r)
	return Reply{Status: r.Status, ExecutionCount: r.Count}, err
}

// ExitedError is an execution's error when the kernel died during it.
type ExitedError struct{ Err error }

func (e *ExitedError) Error() string {
	if e.Err == nil {
		return "the kernel exited"
	}
	return "the kernel died: " + e.Err.Error()
}

// outputOf is what an iopub message gives an execution's caller.
func outputOf(m message) (Output, bool) {
	switch m.Header.MsgType {
	case "stream":
		var c struct {
			Name string `json:"name"`
			Text string `json:"text"`
		}
		if json.Unmarshal(m.Content, &c) != nil {
			return Output{}, false
		}
		return Output{Type: c.Name, Text: c.Text}, c.Name == "stdout" || c.Name == "stderr"
	case "execute_result", "display_data":
		var c struct {
			Data map[string]any `json:"data"`
		}
		if json.Unmarshal(m.Content, &c) != nil {
			return Output{}, false
		}
		return Output{Type: "result", Data: c.Data, Main: m.Header.MsgType == "execute_result"}, true
	case "error":
		var c struct {
			Name      string   `json:"ename"`
			Value     string   `json:"evalue"`
			Traceback []string `json:"traceback"`
		}
		if json.Unmarshal(m.Content, &c) != nil {
			return Output{}, false
		}
		return Output{Type: "error", Name: c.Name, Value: c.Value, Traceback: c.Traceback}, true
	}
	return Output{}, false
}
