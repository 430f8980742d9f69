// A terminal on a sandbox's page: xterm.js (vendored under vendor/, loaded
// on first use) on a new PTY of the sandbox, over the agent's WebSocket as
// serve proxies it (binary messages both ways; resize and exit as JSON
// text). It follows its box's size, which follows the window's.
import { api, socket } from './api.js';

const enc = new TextEncoder();

// openTerminal starts a login shell in sandbox id on a terminal drawn in
// box and calls status with what it is doing. It answers {close}: close
// ends the shell (a PTY left running would outlive the page) and the
// connection.
export async function openTerminal(box, id, status) {
  const [{ Terminal }, { FitAddon }] = await Promise.all([
    import('./vendor/xterm/xterm.mjs'), import('./vendor/xterm-addon-fit/addon-fit.mjs')]);
  const term = new Terminal({
    cursorBlink: true, fontSize: 14, scrollback: 5000,
    fontFamily: 'ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace',
    theme: { background: '#0d1117', foreground: '#e6edf3', cursor: '#e6edf3' },
  });
  const fit = new FitAddon();
  term.loadAddon(fit);
  box.replaceChildren();
  term.open(box);
  fit.fit();
  const sid = encodeURIComponent(id);
  let info;
  try {
    info = await api('POST', `/sandboxes/${sid}/pty`, { cols: term.cols, rows: term.rows });
  } catch (e) {
    term.dispose();
    throw e;
  }
  box.dataset.pid = String(info.pid);
  let ended = false;
  const ws = socket(`/sandboxes/${sid}/pty/${info.pid}`, 'sbx.pty');
  ws.binaryType = 'arraybuffer';
  status(`connecting to shell ${info.pid}…`, 'connecting');
  ws.onopen = () => {
    // The box may have changed size since the PTY was made.
    ws.send(JSON.stringify({ type: 'resize', cols: term.cols, rows: term.rows }));
    status(`shell ${info.pid}, ${term.cols}×${term.rows}`, 'open');
    term.focus();
  };
  ws.onmessage = (ev) => {
    if (typeof ev.data !== 'string') { term.write(new Uint8Array(ev.data)); return; }
    let ctl = {};
    try { ctl = JSON.parse(ev.data); } catch { /* not a control message: ignored */ }
    if (ctl.type === 'exit') {
      ended = true;
      status(`the shell exited${ctl.signal ? ` on signal ${ctl.signal}` : ` with code ${ctl.exitCode ?? '?'}`}`, 'exited');
    }
  };
  ws.onclose = (ev) => {
    if (!ended) status(`disconnected${ev.reason ? `: ${ev.reason}` : ''} (the sandbox may have stopped or paused)`, 'closed');
  };
  const send = (data) => { if (ws.readyState === WebSocket.OPEN) ws.send(data); };
  term.onData((d) => send(enc.encode(d)));
  term.onBinary((d) => send(Uint8Array.from(d, (c) => c.charCodeAt(0))));
  box.dataset.size = `${term.cols}x${term.rows}`;
  term.onResize(({ cols, rows }) => {
    box.dataset.size = `${cols}x${rows}`;
    send(JSON.stringify({ type: 'resize', cols, rows }));
    if (ws.readyState === WebSocket.OPEN) status(`shell ${info.pid}, ${cols}×${rows}`, 'open');
  });
  const watch = new ResizeObserver(() => { if (box.clientWidth > 0) fit.fit(); });
  watch.observe(box);
  return {
    pid: info.pid,
    close() {
      watch.disconnect();
      ws.onclose = null;
      ws.close();
      term.dispose();
      if (!ended) api('DELETE', `/sandboxes/${sid}/commands/${info.pid}`).catch(() => {});
    },
  };
}
