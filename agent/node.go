package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/sbxdev/sbx/agent/kernel"
)

// nodeDriver is the program a javascript context's node runs: it reads one
// JSON request ({"code"}) per line on stdin, runs the code in one vm
// context that persists (variables declared with var, and globals; a
// top-level let or const lives for its run), and writes its events as JSON
// lines on descriptor 3: console output and process.stdout and stderr
// writes as they happen, the value of the last expression (awaited when it
// is a promise) as a text/plain result, an error with its name, message and
// stack, then the end.
const nodeDriver = `
const vm = require('vm'), util = require('util'), fs = require('fs'), readline = require('readline');
const emit = (ev) => fs.writeSync(3, JSON.stringify(ev) + '\n');
const text = (args) => util.format(...args) + '\n';
const sandbox = { require, process, Buffer, setTimeout, setInterval, clearTimeout, clearInterval, setImmediate, URL, TextEncoder, TextDecoder, fetch: globalThis.fetch };
sandbox.console = {
  log: (...a) => emit({ type: 'stdout', text: text(a) }), info: (...a) => emit({ type: 'stdout', text: text(a) }),
  error: (...a) => emit({ type: 'stderr', text: text(a) }), warn: (...a) => emit({ type: 'stderr', text: text(a) }),
};
process.stdout.write = (s) => { emit({ type: 'stdout', text: String(s) }); return true; };
process.stderr.write = (s) => { emit({ type: 'stderr', text: String(s) }); return true; };
sandbox.globalThis = sandbox;
const context = vm.createContext(sandbox);
const rl = readline.createInterface({ input: process.stdin });
let queue = Promise.resolve();
rl.on('line', (line) => { queue = queue.then(() => run(JSON.parse(line).code)); });
async function run(code) {
  try {
    let value = vm.runInContext(code, context, { filename: 'code' });
    if (value && typeof value.then === 'function') value = await value;
    if (value !== undefined) emit({ type: 'result', data: { 'text/plain': util.inspect(value) } });
    emit({ type: 'end', status: 'ok' });
  } catch (e) {
    const err = e && typeof e === 'object' && 'message' in e ? e : new Error(String(e)); // the vm's own Error is not this realm's
    emit({ type: 'error', name: err.name, value: err.message, traceback: String(err.stack || '').split('\n') });
    emit({ type: 'end', status: 'error' });
  }
}
`

// nodeShell is a javascript context's interpreter: node running
// nodeDriver. An interrupt (SIGINT) ends what runs in node only by ending
// node: a timeout kills it, and the context is dead.
type nodeShell struct {
	*process
	stdin  io.WriteCloser
	events chan kernel.Output
	ends   chan string
	n      int
}

func (a *Agent) startNode(c *codeContext) (*nodeShell, error) {
	cmd, _, err := a.command(c, "node", "-e", nodeDriver)
	if err != nil {
		return nil, err
	}
	events, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer w.Close()
	cmd.ExtraFiles = []*os.File{w}
	n := &nodeShell{events: make(chan kernel.Output, 256), ends: make(chan string, 1)}
	if n.stdin, err = cmd.StdinPipe(); err == nil {
		n.process, err = a.start(cmd)
	}
	if err != nil {
		events.Close()
		return nil, err
	}
	go n.read(events)
	return n, nil
}

// read passes the driver's events on.
func (n *nodeShell) read(r io.ReadCloser) {
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var ev struct {
			Type      string         `json:"type"`
			Text      string         `json:"text"`
			Data      map[string]any `json:"data"`
			Name      string         `json:"name"`
			Value     string         `json:"value"`
			Traceback []string       `json:"traceback"`
			Status    string         `json:"status"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		if ev.Type == "end" {
			n.ends <- ev.Status
			continue
		}
		n.events <- kernel.Output{Type: ev.Type, Text: ev.Text, Data: ev.Data, Main: ev.Type == "result", Name: ev.Name, Value: ev.Value, Traceback: ev.Traceback}
	}
}

// Execute runs code in node; see nodeShell.
func (n *nodeShell) Execute(ctx context.Context, code string, emit func(kernel.Output) error) (kernel.Reply, error) {
	n.n++
	req, _ := json.Marshal(map[string]string{"code": code})
	if _, err := n.stdin.Write(append(req, '\n')); err != nil {
		return kernel.Reply{}, &kernel.ExitedError{Err: n.err}
	}
	for {
		select {
		case o := <-n.events:
			emit(o)
		case status := <-n.ends:
			for len(n.events) > 0 { // what came before the end
				emit(<-n.events)
			}
			return kernel.Reply{Status: status, ExecutionCount: n.n}, nil
		case <-ctx.Done():
			n.Close()
			return kernel.Reply{}, &kernel.ExitedError{Err: fmt.Errorf("node ran past the timeout and was killed")}
		case <-n.exited:
			return kernel.Reply{}, &kernel.ExitedError{Err: n.err}
		}
	}
}

// Interrupt ends node (it cannot interrupt its own run).
func (n *nodeShell) Interrupt() error { return n.Close() }

// Close kills node's process group.
func (n *nodeShell) Close() error {
	n.kill()
	return nil
}
