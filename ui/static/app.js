// The sbx console: sign-in, the sandboxes list, the three-step create
// wizard, a sandbox's page (its files, its CPU and memory), the runtimes
// and the wallet, over the public REST API (api.js). Views are sections of
// index.html switched by the URL's hash; everything a user gave or the API
// answered is written as text, never as HTML.
import { api, pages, stream, raw, session, newKey, APIError } from './api.js';
import { openTerminal } from './terminal.js';

const $ = (sel, root = document) => root.querySelector(sel);
const $$ = (sel, root = document) => [...root.querySelectorAll(sel)];

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === false || v == null) continue;
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) if (c != null) e.append(c instanceof Node ? c : String(c));
  return e;
}

const ACTIVE = new Set(['starting', 'running', 'paused']);
const REFRESH_MS = 10000;
const LIST_MAX = 2000; // the most sandboxes the list shows; a state filter narrows it
let me = null;
let refreshTimer = null;

// ---- errors, as a person wants them ----

function explain(err) {
  if (!(err instanceof APIError)) return { title: 'Something went wrong', text: String(err) };
  const d = err.detail;
  switch (err.status) {
    case 400: if (err.fields.length) return { title: 'Please check the fields marked below', text: `${d}.` };
      break;
    case 0: return { title: 'The server cannot be reached', text: `${d}. Check that sbx serve is running, then try again.` };
    case 401: return { title: 'Please sign in again', text: `The server did not accept your API key: it may have been revoked or mistyped. (${d})` };
    case 402: return { title: 'Your org has no credits left', text: `${d}. New sandboxes cannot start and paused ones cannot resume until the org is topped up: ask the operator of this sbx to add credits (sbx credits top-up), then try again. Your sandboxes and their files are kept.` };
    case 403:
      if (err.type === 'kyc_required') return { title: 'Verification needed', text: `${d}. Creating sandboxes needs a verified org or user: finish verification with your provider of sbx, or ask its operator.` };
      if (err.type === 'plan_limit_exceeded') return { title: 'Your plan’s limit is reached', text: `${d}. Pause or delete a sandbox, ask for less, or ask the operator for a larger plan.` };
      return { title: 'Not allowed', text: `${d}. Your key’s role does not allow this; ask an owner or admin of the org.` };
    case 404: return { title: 'Not found', text: `${d}. It may have been deleted; the list is refreshed.` };
    case 409: return { title: 'Not possible now', text: `${d}.` };
  }
  return { title: `The server answered ${err.status}`, text: d || err.message };
}

function showError(err) {
  if (err instanceof APIError && err.status === 401 && session.key()) {
    signOut();
  }
  const { title, text } = explain(err);
  const box = $('#error');
  box.replaceChildren(el('strong', {}, title), ' ', el('span', {}, text),
    el('button', { type: 'button', class: 'link', 'aria-label': 'Dismiss', onclick: clearError }, '×'));
  box.dataset.status = err instanceof APIError ? String(err.status) : '';
  box.hidden = false;
}

function clearError() {
  const box = $('#error');
  box.hidden = true;
  box.replaceChildren();
  delete box.dataset.status;
}

// ---- views ----

function show(view) {
  for (const v of ['signin', 'list', 'new', 'sandbox', 'wallet', 'runtimes']) $(`#view-${v}`).hidden = v !== view;
  const signedIn = view !== 'signin';
  $('#nav').hidden = !signedIn;
  $('#signout').hidden = !signedIn;
  $('#whoami').hidden = !signedIn;
  if (view !== 'list') stopRefresh();
  if (view !== 'sandbox') closeSandbox();
  for (const a of $$('#nav a')) {
    if (a.id === `nav-${view === 'list' || view === 'new' || view === 'sandbox' ? 'sandboxes' : view}`) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
}

async function route() {
  if (!session.key()) { show('signin'); $('#api-key').focus(); return; }
  if (!me) {
    try { await loadMe(); } catch (e) { showError(e); if (!session.key()) return; }
  }
  const page = location.hash.match(/^#\/sandbox\/([A-Za-z0-9-]+)$/);
  if (page) { show('sandbox'); openSandbox(page[1]); }
  else if (location.hash === '#/new') { show('new'); openWizard(); }
  else if (location.hash === '#/wallet') { show('wallet'); loadWallet(); }
  else if (location.hash === '#/runtimes') { show('runtimes'); loadRuntimes(); }
  else { show('list'); loadList(); }
}

let projects = []; // the projects the key reaches: {id, name, workspace: {id, name}}

async function loadMe() {
  me = await api('GET', '/me');
  projects = await reachableProjects();
  renderWho();
}

// reachableProjects lists the projects of every workspace the key reaches;
// a key that may list none acts in its own alone.
async function reachableProjects() {
  const org = `/org/${encodeURIComponent(me.org.id)}`;
  try {
    const wss = await pages(`${org}/workspaces`);
    const lists = await Promise.all(wss.map((ws) => pages(`${org}/ws/${encodeURIComponent(ws.id)}/projects`)
      .then((ps) => ps.map((p) => ({ id: p.id, name: p.name, workspace: { id: ws.id, name: ws.name } })))));
    return lists.flat();
  } catch {
    return [];
  }
}

// project is the project the console acts in: the one picked in this tab,
// else the key's.
function project() {
  return projects.find((p) => p.id === session.project())
    || { id: me.project?.id, name: me.project?.name || '—', workspace: me.workspace || {} };
}

const projectLabel = (p) => `${p.workspace?.name || '—'} / ${p.name}`;

function renderWho() {
  const cur = project();
  let pick = el('span', { title: 'workspace / project' }, projectLabel(cur));
  if (projects.length > 1) {
    pick = el('select', { id: 'project-pick', 'aria-label': 'Project to act in' },
      ...projects.map((p) => el('option', { value: p.id, selected: p.id === cur.id }, projectLabel(p))));
    pick.addEventListener('change', () => { session.setProject(pick.value); renderWho(); route(); });
  }
  $('#whoami').replaceChildren(el('span', { title: 'org' }, me.org.name), ' / ', pick, ' · ',
    el('span', { class: 'role', title: 'role' }, me.role + (me.operator ? ' (operator)' : '')));
}

function signOut() {
  session.clear();
  me = null;
  stopRefresh();
  $('#sandboxes tbody').replaceChildren();
  location.hash = '';
  show('signin');
}

$('#signin').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  clearError();
  const input = $('#api-key');
  session.set(input.value.trim());
  input.value = '';
  me = null;
  try {
    await loadMe();
  } catch (e) {
    session.clear();
    showError(e);
    show('signin');
    return;
  }
  location.hash = '#/sandboxes';
  route();
});
$('#signout').addEventListener('click', signOut);
window.addEventListener('hashchange', () => { clearError(); route(); });

// ---- the list ----

const fmtTime = (t) => (t ? new Date(t).toLocaleString() : '—');
const fmtCredits = (c) => (c ? Number(c).toFixed(4) : '—');

function stopRefresh() {
  clearTimeout(refreshTimer);
  refreshTimer = null;
}

let listSeq = 0;
async function loadList() {
  stopRefresh();
  const seq = ++listSeq;
  const state = $('#filter-state').value;
  const t0 = performance.now();
  let items = [];
  let more = false;
  try {
    // Every page, up to LIST_MAX sandboxes, newest first.
    let cursor = '';
    do {
      const q = new URLSearchParams({ limit: '500' });
      if (state) q.set('state', state);
      if (cursor) q.set('cursor', cursor);
      const page = await api('GET', `/sandboxes?${q}`);
      items = items.concat(page.items || []);
      cursor = page.next_cursor || '';
    } while (cursor && items.length < LIST_MAX);
    more = !!cursor;
  } catch (e) {
    showError(e);
    return;
  }
  if (seq !== listSeq || $('#view-list').hidden) return;
  const t1 = performance.now();
  renderList(items);
  $('#more').hidden = !more;
  // What the list took, for the browser test to report: fetching every
  // page and rendering the rows.
  performance.measure('sbx-list-render', { start: t1, detail: { rows: items.length } });
  performance.measure('sbx-list-load', { start: t0, detail: { rows: items.length } });
  const active = items.some((s) => ACTIVE.has(s.state));
  const status = $('#refresh-status');
  status.dataset.auto = active ? 'on' : 'off';
  status.textContent = active
    ? `Updated ${new Date().toLocaleTimeString()}; refreshing every 10 s while a sandbox is starting, running or paused.`
    : `Updated ${new Date().toLocaleTimeString()}; not refreshing by itself (no sandbox is active).`;
  if (active) refreshTimer = setTimeout(loadList, REFRESH_MS);
}

function renderList(items) {
  const body = $('#sandboxes tbody');
  body.replaceChildren(...items.map(row));
  $('#empty').hidden = items.length > 0;
}

function reason(s) {
  if (s.state === 'paused') return `paused: ${s.pause_reason || 'user'}${s.hibernated ? ', hibernated' : ''}`;
  if (s.end_reason) return `ended: ${s.end_reason}`;
  return '';
}

function row(s) {
  const actions = el('td', { class: 'actions' });
  const act = (name, label, fn, cls) => actions.append(el('button', { type: 'button', class: `${name} ${cls || ''}`, 'data-action': name, 'aria-label': `${label} ${s.sandboxID}`, onclick: fn }, label));
  if (s.state === 'running') act('pause', 'Pause', () => action(s, 'pause'));
  if (s.state === 'paused') act('resume', 'Resume', () => action(s, 'resume'));
  if (s.state !== 'killed') act('delete', 'Delete', () => confirmDelete(s), 'danger');
  const gpu = s.gpu ? `${s.gpu.count || 1}× ${s.gpu.type}${s.gpu.fraction && s.gpu.fraction !== 100 ? ` (${s.gpu.fraction} %)` : ''}` : '—';
  return el('tr', { 'data-id': s.id, 'data-sandbox-id': s.sandboxID, 'data-state': s.state },
    el('td', {}, el('a', { href: `#/sandbox/${s.id}`, class: 'sid' }, el('code', {}, s.sandboxID)), el('br'), el('small', { class: 'muted uuid' }, s.id)),
    el('td', {}, el('span', { class: `state state-${s.state}` }, s.state),
      reason(s) ? el('div', { class: 'muted reason' }, reason(s)) : null,
      s.diagnostic ? el('div', { class: 'muted' }, s.diagnostic) : null),
    el('td', {}, s.templateID),
    el('td', {}, `${s.kind} · ${s.provider}`),
    el('td', {}, `${s.cpu} vCPU · ${s.memoryMB} MiB · ${s.diskMB} MiB disk`),
    el('td', {}, gpu),
    el('td', {}, fmtTime(s.createdAt)),
    el('td', {}, ACTIVE.has(s.state) ? fmtTime(s.expiresAt) : '—'),
    el('td', { class: 'num' }, fmtCredits(s.estimated_total_credits)),
    actions);
}

function replaceRow(s) {
  const old = $(`#sandboxes tr[data-id="${CSS.escape(s.id)}"]`);
  if (old) old.replaceWith(row(s));
}

async function action(s, verb) {
  clearError();
  const tr = $(`#sandboxes tr[data-id="${CSS.escape(s.id)}"]`);
  tr?.querySelectorAll('button').forEach((b) => { b.disabled = true; });
  try {
    const updated = verb === 'delete'
      ? await api('DELETE', `/sandboxes/${encodeURIComponent(s.id)}`)
      : await api('POST', `/sandboxes/${encodeURIComponent(s.id)}/${verb}`);
    replaceRow(updated);
  } catch (e) {
    showError(e);
  }
  loadList();
}

// ask opens the confirmation with text and fn for its OK button. The OK is
// taken from the form's submit, which comes with the click, never from the
// dialog's close event: that comes as a task of its own, late enough under
// load to be taken for the next question's answer.
let confirmed = null;
function ask(text, ok, fn) {
  const dlg = $('#confirm');
  $('#confirm-text').textContent = text;
  $('#confirm-ok').textContent = ok;
  dlg.returnValue = '';
  confirmed = fn;
  dlg.showModal();
  $('#confirm-cancel').focus();
}
$('#confirm form').addEventListener('submit', (ev) => {
  const fn = confirmed;
  confirmed = null;
  if (ev.submitter?.value === 'ok' && fn) fn();
});

function confirmDelete(s) {
  ask(`Delete sandbox ${s.sandboxID}? Its processes and files are gone for good; its record and bill stay.`, 'Delete', () => action(s, 'delete'));
}

$('#filter-state').addEventListener('change', loadList);
$('#refresh').addEventListener('click', loadList);

// ---- a sandbox's page ----

const PAGE_POLL_MS = 3000;
let page = null; // {id, timer, logs: AbortController, cmd: AbortController, term}

function closeSandbox() {
  if (!page) return;
  closeTerminal(page);
  clearTimeout(page.timer);
  clearTimeout(page.metricsTimer);
  page.logs?.abort();
  page.cmd?.abort();
  page = null;
}

async function openSandbox(id) {
  closeSandbox();
  page = { id, samples: [] };
  const mine = page;
  $('#logs').textContent = '';
  $('#files tbody').replaceChildren();
  $('#files-status').textContent = '';
  $('#metrics-status').textContent = '';
  renderMetrics(mine);
  $('#cmd-output').hidden = true;
  $('#cmd-output').textContent = '';
  $('#terminal-status').textContent = '';
  await pollSandbox(mine);
  if (page !== mine) return;
  followLogs(mine);
  sampleMetrics(mine);
  if (mine.sandbox?.state === 'running') listFiles(mine, '/workspace');
  else $('#files-status').textContent = `Files are listed by themselves while the sandbox runs (it is ${mine.sandbox?.state || 'unknown'}).`;
}

async function pollSandbox(mine) {
  let s;
  try {
    s = await api('GET', `/sandboxes/${encodeURIComponent(mine.id)}`);
  } catch (e) {
    if (page === mine) showError(e);
    return;
  }
  if (page !== mine) return;
  mine.sandbox = s;
  renderSandbox(s);
  if (ACTIVE.has(s.state)) mine.timer = setTimeout(() => pollSandbox(mine), PAGE_POLL_MS);
}

function renderSandbox(s) {
  $('#sandbox-title').textContent = s.sandboxID;
  $('#sandbox-uuid').textContent = `UUID ${s.id} · org ${s.orgID} · project ${s.projectID}`;
  const st = $('#sandbox-state');
  st.className = `state state-${s.state}`;
  st.textContent = s.state + (reason(s) ? ` (${reason(s)})` : '');
  $('#view-sandbox').dataset.state = s.state;
  const acts = $('#sandbox-actions');
  acts.replaceChildren();
  const act = (name, label, fn, cls) => acts.append(el('button', { type: 'button', class: `${name} ${cls || ''}`, onclick: fn }, label));
  const run = async (verb) => {
    clearError();
    try {
      renderSandbox(verb === 'delete' ? await api('DELETE', `/sandboxes/${encodeURIComponent(s.id)}`)
        : await api('POST', `/sandboxes/${encodeURIComponent(s.id)}/${verb}`));
    } catch (e) { showError(e); }
    if (page) { clearTimeout(page.timer); pollSandbox(page); }
  };
  $('#terminal-open').disabled = s.state !== 'running';
  if ($('#terminal').hidden) $('#terminal-status').textContent = s.state === 'running' ? '' : `opens while the sandbox runs (it is ${s.state})`;
  if (s.state === 'running') act('pause', 'Pause', () => run('pause'));
  if (s.state === 'paused') act('resume', 'Resume', () => run('resume'));
  if (s.state !== 'killed') act('delete', 'Delete', () => confirmThen(s, () => run('delete')), 'danger');
  const dl = (sel, items) => $(sel).replaceChildren(...items.filter(([, v]) => v !== '' && v != null)
    .flatMap(([k, v]) => [el('dt', {}, k), el('dd', { 'data-key': k }, v)]));
  dl('#sandbox-details', [
    ['Template', s.templateID], ['Kind', s.kind], ['Provider', s.provider],
    ['Resources', `${s.cpu} vCPU · ${s.memoryMB} MiB · ${s.diskMB} MiB disk`],
    ['GPU', s.gpu ? `${s.gpu.count || 1}× ${s.gpu.type} (${s.gpu.fraction || 100} %)` : 'none'],
    ['Created', fmtTime(s.createdAt)], ['Started', s.startedAt ? fmtTime(s.startedAt) : ''],
    ['Expires', ACTIVE.has(s.state) ? fmtTime(s.expiresAt) : ''],
    ['Timeout', `${s.timeout} s, then ${s.autoPause ? 'paused' : 'ended'}`],
    ['Ended', s.endedAt ? fmtTime(s.endedAt) : ''],
    ['Diagnostic', s.diagnostic || ''],
    ['Environment', (s.envVarNames || []).join(', ') || 'none'],
    ['Credits', `${fmtCredits(s.estimated_total_credits)} (billed ${fmtCredits(s.billed_credits)}, running ${fmtCredits(s.running_credits)})`],
  ]);
  const code = (v) => (v ? el('code', {}, v) : '');
  const ports = (s.ports || []).map((p) => el('div', {}, `${p.port}: `, p.url ? el('code', {}, p.url) : ''));
  dl('#sandbox-connection', [
    ['Runtime URL', code(s.runtimeURL)],
    ['Access token', s.accessToken ? el('details', {}, el('summary', {}, 'Show'), el('code', {}, s.accessToken)) : ''],
    ['Preview URL', code(s.previewURL)],
    ['Traffic token', s.trafficToken ? el('details', {}, el('summary', {}, 'Show'), el('code', {}, s.trafficToken)) : ''],
    ['Preview access', s.preview?.access || ''],
    ['Ports', ports.length ? el('div', {}, ...ports) : 'none listed'],
    ['SSH', ACTIVE.has(s.state) ? code(`sbx sandbox ssh ${s.sandboxID}`) : ''],
  ]);
  $('#sandbox-timeline').replaceChildren(...(s.timeline || []).map((ev) => el('li', { 'data-step': ev.step },
    el('time', { datetime: ev.at }, new Date(ev.at).toLocaleTimeString()), ' ', el('b', {}, ev.step), ev.detail ? ` ${ev.detail}` : '')));
}

function confirmThen(s, fn) {
  ask(`Delete sandbox ${s.sandboxID}? Its processes and files are gone for good; its record and bill stay.`, 'Delete', fn);
}

async function followLogs(mine) {
  mine.logs = new AbortController();
  const pre = $('#logs');
  const status = $('#logs-status');
  status.textContent = 'following';
  try {
    await stream('GET', `/sandboxes/${encodeURIComponent(mine.id)}/logs/stream`, undefined, (l) => {
      if (page !== mine) return;
      const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
      if (l.type === 'error') pre.append(`— ${l.error}\n`);
      else pre.append(`${new Date(l.at).toLocaleTimeString()} ${l.source} ${l.line}\n`);
      if (atEnd) pre.scrollTop = pre.scrollHeight;
    }, mine.logs.signal);
    if (page === mine) status.textContent = 'ended';
  } catch (e) {
    if (page !== mine || e.name === 'AbortError') return;
    status.textContent = 'stopped';
    showError(e);
  }
}

const b64 = (s) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));

$('#command').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const mine = page;
  const cmd = $('#cmd').value.trim();
  if (!mine || !cmd) return;
  clearError();
  mine.cmd?.abort();
  mine.cmd = new AbortController();
  const out = $('#cmd-output');
  out.hidden = false;
  out.textContent = `$ ${cmd}\n`;
  delete out.dataset.exit;
  const dec = new TextDecoder();
  $('#cmd-run').disabled = true;
  try {
    await stream('POST', `/sandboxes/${encodeURIComponent(mine.id)}/commands`, { cmd }, (e) => {
      if (e.type === 'stdout' || e.type === 'stderr') out.append(dec.decode(b64(e.data || ''), { stream: true }));
      if (e.type === 'end') {
        out.append(`\n[exit ${e.exitCode ?? '?'}${e.signal ? `, signal ${e.signal}` : ''}${e.error ? `: ${e.error}` : ''}]\n`);
        out.dataset.exit = String(e.exitCode ?? '');
      }
      if (e.type === 'error') out.append(`\n[${e.error}]\n`);
    }, mine.cmd.signal);
  } catch (e) {
    if (e.name !== 'AbortError') showError(e);
  } finally {
    $('#cmd-run').disabled = false;
  }
});

// ---- a terminal (terminal.js) ----

function closeTerminal(mine) {
  mine.term?.close();
  mine.term = null;
  $('#terminal').hidden = true;
  $('#terminal-close').hidden = true;
  $('#terminal-open').hidden = false;
}

$('#terminal-open').addEventListener('click', async () => {
  const mine = page;
  if (!mine || mine.term) return;
  clearError();
  const box = $('#terminal');
  const status = (text, state) => {
    if (page !== mine) return;
    $('#terminal-status').textContent = text;
    box.dataset.state = state;
  };
  $('#terminal-open').hidden = true;
  box.hidden = false;
  try {
    const term = await openTerminal(box, mine.id, status);
    if (page !== mine) { term.close(); return; }
    mine.term = term;
    $('#terminal-close').hidden = false;
  } catch (e) {
    if (page !== mine) return;
    closeTerminal(mine);
    showError(e);
  }
});
$('#terminal-close').addEventListener('click', () => {
  if (!page) return;
  closeTerminal(page);
  $('#terminal-status').textContent = 'closed; its shell ended';
});

// ---- CPU and memory, sampled while the page is open ----

const METRICS_MS = 3000;
const METRICS_KEEP = 60; // samples shown: three minutes

function svg(tag, attrs) {
  const e = document.createElementNS($('#metrics-chart').namespaceURI, tag) // the page's <svg>'s: SVG's;
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}

async function sampleMetrics(mine) {
  if (page !== mine) return;
  const s = mine.sandbox;
  if (s && s.state === 'running') {
    try {
      const m = await api('GET', `/sandboxes/${encodeURIComponent(mine.id)}/metrics`);
      if (page !== mine) return;
      const prev = mine.samples[mine.samples.length - 1];
      const at = Date.parse(m.at);
      // CPU is the vCPUs used since the last sample: cpuSeconds counts up.
      const cpu = prev && at > prev.at ? Math.max(0, (m.cpuSeconds - prev.cpuSeconds) / ((at - prev.at) / 1000)) : null;
      mine.samples.push({ at, cpuSeconds: m.cpuSeconds, cpu, mem: m.memoryBytes / 1048576 });
      if (mine.samples.length > METRICS_KEEP) mine.samples.shift();
      $('#metrics-status').textContent = `every ${METRICS_MS / 1000} s while this page is open`;
    } catch (e) {
      if (page !== mine) return;
      $('#metrics-status').textContent = `not sampled: ${explain(e).text}`;
    }
    renderMetrics(mine);
  } else if (s) {
    $('#metrics-status').textContent = `not sampled while ${s.state}`;
  }
  mine.metricsTimer = setTimeout(() => sampleMetrics(mine), METRICS_MS);
}

function renderMetrics(mine) {
  const s = mine.sandbox || {};
  const w = 600; const h = 140;
  const chart = $('#metrics-chart');
  const cpuMax = Math.max(s.cpu || 1, ...mine.samples.map((x) => x.cpu || 0));
  const memMax = Math.max(s.memoryMB || 1, ...mine.samples.map((x) => x.mem));
  const x = (i) => (mine.samples.length < 2 ? w : (i / (mine.samples.length - 1)) * w); // the samples kept, across the chart
  const line = (f, max) => mine.samples.map((p, i) => [i, f(p)]).filter(([, v]) => v != null)
    .map(([i, v]) => `${x(i).toFixed(1)},${(h - 4 - (v / max) * (h - 8)).toFixed(1)}`).join(' ');
  chart.replaceChildren(
    svg('line', { class: 'grid-line', x1: 0, x2: w, y1: h / 2, y2: h / 2 }),
    svg('polyline', { class: 'cpu', points: line((p) => p.cpu, cpuMax) }),
    svg('polyline', { class: 'mem', points: line((p) => p.mem, memMax) }));
  const last = mine.samples[mine.samples.length - 1];
  const cap = $('#metrics-caption');
  cap.dataset.samples = String(mine.samples.length);
  if (!last) { cap.textContent = 'No samples yet.'; return; }
  cap.replaceChildren(
    el('span', { class: 'legend-cpu' }, '— CPU'), ` ${last.cpu == null ? '…' : last.cpu.toFixed(2)} of ${s.cpu} vCPU · `,
    el('span', { class: 'legend-mem' }, '- - memory'), ` ${last.mem.toFixed(1)} of ${s.memoryMB} MiB · `,
    `${mine.samples.length} samples; the chart's top is the sandbox's size.`);
}

// ---- files ----

const fmtSize = (n) => (n < 1024 ? `${n} B` : n < 1048576 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1048576).toFixed(1)} MiB`);
const joinPath = (dir, name) => (dir.endsWith('/') ? dir + name : `${dir}/${name}`);
const parentOf = (p) => (p.replace(/\/+$/, '').replace(/\/[^/]*$/, '') || '/');

async function listFiles(mine, dir) {
  if (page !== mine) return;
  $('#files-path').value = dir;
  const body = $('#files tbody');
  try {
    const r = await api('GET', `/sandboxes/${encodeURIComponent(mine.id)}/files/list?${new URLSearchParams({ path: dir, depth: '1' })}`);
    if (page !== mine) return;
    mine.dir = dir;
    const items = (r.items || []).filter((f) => f.path !== dir);
    items.sort((a, b) => (a.type === 'dir') !== (b.type === 'dir') ? (a.type === 'dir' ? -1 : 1) : a.name.localeCompare(b.name));
    body.replaceChildren(...items.map((f) => fileRow(mine, f)));
    $('#files-empty').hidden = items.length > 0;
    $('#files').dataset.dir = dir;
  } catch (e) {
    if (page !== mine) return;
    body.replaceChildren();
    $('#files-empty').hidden = true;
    showError(e);
  }
}

function fileRow(mine, f) {
  const actions = el('td', { class: 'actions' });
  if (f.type === 'file') {
    actions.append(el('button', { type: 'button', class: 'download', 'aria-label': `Download ${f.name}`, onclick: () => download(mine, f) }, 'Download'));
  }
  actions.append(el('button', { type: 'button', class: 'delete danger', 'aria-label': `Delete ${f.name}`, onclick: () => confirmFileDelete(mine, f) }, 'Delete'));
  const name = f.type === 'dir'
    ? el('button', { type: 'button', class: 'link-like', onclick: () => listFiles(mine, f.path) }, `${f.name}/`)
    : el('span', {}, f.name, f.target ? ` → ${f.target}` : '');
  return el('tr', { 'data-path': f.path, 'data-type': f.type },
    el('td', {}, name), el('td', {}, f.type), el('td', { class: 'num' }, f.type === 'file' ? fmtSize(f.size) : ''),
    el('td', {}, el('code', {}, f.mode)), el('td', {}, fmtTime(f.modTime)), actions);
}

async function download(mine, f) {
  clearError();
  try {
    const res = await raw('GET', `/sandboxes/${encodeURIComponent(mine.id)}/files?${new URLSearchParams({ path: f.path })}`);
    const url = URL.createObjectURL(await res.blob());
    const a = el('a', { href: url, download: f.name, hidden: true });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
    $('#files-status').textContent = `Downloaded ${f.name}.`;
  } catch (e) { showError(e); }
}

function confirmFileDelete(mine, f) {
  ask(`Delete ${f.path}${f.type === 'dir' ? ' and everything in it' : ''}? It is gone for good.`, 'Delete', async () => {
    clearError();
    try {
      await raw('DELETE', `/sandboxes/${encodeURIComponent(mine.id)}/files?${new URLSearchParams({ path: f.path })}`);
      $('#files-status').textContent = `Deleted ${f.name}.`;
    } catch (e) { showError(e); }
    listFiles(mine, mine.dir || parentOf(f.path));
  });
}

$('#files-nav').addEventListener('submit', (ev) => {
  ev.preventDefault();
  if (page) listFiles(page, $('#files-path').value.trim() || '/workspace');
});
$('#files-up').addEventListener('click', () => { if (page) listFiles(page, parentOf(page.dir || $('#files-path').value)); });
$('#files-upload').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const mine = page;
  const file = $('#files-file').files[0];
  if (!mine || !file) { $('#files-status').textContent = 'Choose a file first.'; return; }
  clearError();
  const dir = mine.dir || '/workspace';
  $('#files-send').disabled = true;
  $('#files-status').textContent = `Uploading ${file.name}…`;
  try {
    await raw('PUT', `/sandboxes/${encodeURIComponent(mine.id)}/files?${new URLSearchParams({ path: joinPath(dir, file.name) })}`, file, 'application/octet-stream');
    $('#files-status').textContent = `Uploaded ${file.name} (${fmtSize(file.size)}).`;
    $('#files-file').value = '';
  } catch (e) {
    $('#files-status').textContent = '';
    showError(e);
  } finally {
    $('#files-send').disabled = false;
  }
  listFiles(mine, dir);
});

// ---- the wallet ----

const fmtC = (c) => (c == null || c === '' ? '—' : Number(c).toFixed(6));
const SANDBOX_RESOURCES = [['cpu', 'CPU'], ['memory', 'Memory'], ['gpu', 'GPU'], ['paused_storage', 'Paused storage']];
// What snapshots and volumes hold is spent by no sandbox: in the totals only.
const RESOURCES = [...SANDBOX_RESOURCES, ['snapshot_storage', 'Snapshots'], ['volume_storage', 'Volumes']];

function pairs(sel, rows) {
  $(`${sel} tbody`).replaceChildren(...(rows.length ? rows : [['none', '']]).map(([k, v]) => el('tr', { 'data-key': k },
    el('th', { scope: 'row' }, k), el('td', { class: 'num' }, v === '' ? '' : fmtC(v)))));
}

function period() {
  const v = $('#period').value;
  if (v === 'custom') {
    const from = $('#period-from').value; const to = $('#period-to').value;
    return { from: from ? new Date(from) : new Date(Date.now() - 86400000), to: to ? new Date(to) : new Date() };
  }
  const to = new Date();
  return { from: new Date(to - Number(v) * 1000), to };
}

$('#period').addEventListener('change', () => {
  const custom = $('#period').value === 'custom';
  $('#period-from').disabled = !custom;
  $('#period-to').disabled = !custom;
  if (!custom) loadWallet();
});
$('#wallet-period').addEventListener('submit', (ev) => { ev.preventDefault(); loadWallet(); });
$('#wallet-refresh').addEventListener('click', () => loadWallet());

let walletSeq = 0;
async function loadWallet() {
  if (!me) return;
  const seq = ++walletSeq;
  const org = encodeURIComponent(me.org.id);
  const { from, to } = period();
  let credits; let spending; let rateList;
  try {
    [credits, spending, rateList] = await Promise.all([
      api('GET', `/org/${org}/credits?limit=50`),
      api('GET', `/org/${org}/credits/spending?${new URLSearchParams({ from: from.toISOString(), to: to.toISOString() })}`),
      api('GET', '/rates'),
    ]);
  } catch (e) { showError(e); return; }
  if (seq !== walletSeq || $('#view-wallet').hidden) return;
  $('#wallet-org').textContent = credits.org.name;
  $('#wallet-balance').textContent = fmtC(credits.balance);
  $('#spending-range').textContent = `Settlements ending from ${fmtTime(spending.from)} to ${fmtTime(spending.to)}.`;
  $('#spending-total').textContent = fmtC(spending.total);
  const br = spending.by_resource || {};
  pairs('#spend-resource', RESOURCES.map(([k, label]) => [label, br[k] || '0']));
  pairs('#spend-project', (spending.by_project || []).map((p) => [p.project.name, p.credits]));
  pairs('#spend-kind', Object.entries(spending.by_kind || {}));
  pairs('#spend-provider', Object.entries(spending.by_provider || {}));
  $('#spend-sandboxes tbody').replaceChildren(...(spending.sandboxes || []).map((s) => el('tr', { 'data-id': s.id },
    el('td', {}, el('a', { href: `#/sandbox/${s.id}` }, el('code', {}, s.sandboxID))),
    el('td', {}, `${s.kind} · ${s.provider}`),
    ...SANDBOX_RESOURCES.map(([k]) => el('td', { class: 'num' }, fmtC(s.resources?.[k]))),
    el('td', { class: 'num' }, fmtC(s.credits)))));
  const st = credits.settlements || [];
  $('#settlements tbody').replaceChildren(...st.map((x) => el('tr', { 'data-id': String(x.id) },
    el('td', {}, `${fmtTime(x.from)} – ${new Date(x.to).toLocaleTimeString()}`),
    el('td', {}, el('a', { href: `#/sandbox/${x.sandbox_id}` }, el('code', {}, x.sandbox_id))),
    el('td', {}, x.state), el('td', { class: 'num' }, fmtC(x.credits)), el('td', { class: 'num' }, fmtC(x.balance_after)))));
  $('#settlements-empty').hidden = st.length > 0;
  const now = Date.now();
  $('#rates tbody').replaceChildren(...(rateList.items || []).map((r) => el('tr', { 'data-resource': r.resource, class: Date.parse(r.effective_at) > now ? 'muted' : '' },
    el('td', {}, r.resource), el('td', {}, r.gpu_type || (r.resource === 'gpu' ? 'any' : '')),
    el('td', {}, r.resource === 'gpu' ? (r.gpu_share ? `${r.gpu_share} %` : 'whole card') : ''),
    el('td', { class: 'num' }, r.credits_per_second), el('td', { class: 'num' }, perHour(Number(r.credits_per_second))),
    el('td', {}, Date.parse(r.effective_at) <= 0 ? 'always' : fmtTime(r.effective_at)))));
  $('#view-wallet').dataset.loaded = String(seq);
}

// ---- runtimes ----

let runtimesSeq = 0;
let bindings = new Map(); // runtime ID → its bindings' promise, fetched once per load of the page
const rtPath = () => `/org/${encodeURIComponent(me.org.id)}/ws/${encodeURIComponent(project().workspace.id)}/runtimes`;

async function loadRuntimes() {
  if (!me) return;
  const seq = ++runtimesSeq;
  bindings = new Map();
  let items = [];
  try {
    items = await pages(rtPath(), LIST_MAX);
  } catch (e) { showError(e); return; }
  if (seq !== runtimesSeq || $('#view-runtimes').hidden) return;
  $('#runtimes tbody').replaceChildren(...items.map(runtimeRow));
  $('#runtimes-empty').hidden = items.length > 0;
  loadSecrets(seq);
}

// loadSecrets lists the secrets the key sees, to check for a start; those
// checked before stay checked.
async function loadSecrets(seq) {
  const box = $('#runtime-secrets-list');
  const checked = new Set($$('input:checked', box).map((i) => i.value));
  let items;
  try {
    items = (await api('GET', `/org/${encodeURIComponent(me.org.id)}/secrets`)).items || [];
  } catch (e) {
    if (seq === runtimesSeq) box.replaceChildren(el('p', { class: 'muted' }, `Secrets are not listed: ${explain(e).text}`));
    return;
  }
  if (seq !== runtimesSeq) return;
  box.replaceChildren(...items.map((s) => el('label', { class: 'check' },
    el('input', { type: 'checkbox', value: s.id, checked: checked.has(s.id), 'data-name': s.name }), ` ${s.name} `,
    el('small', { class: 'muted' }, s.scope === 'user' ? '(yours)' : '(org)'))));
  if (!items.length) box.replaceChildren(el('p', { class: 'muted' }, 'This org has no secrets yet (sbx secret set NAME).'));
}

// loadBindings fills a runtime row's capabilities cell; a row drawn again
// before the page loads again (after an action) asks nothing again.
async function loadBindings(rt, cell) {
  if (!bindings.has(rt.id)) bindings.set(rt.id, api('GET', `${rtPath()}/${encodeURIComponent(rt.id)}/capabilities`));
  try {
    const items = (await bindings.get(rt.id)).items || [];
    cell.replaceChildren(...items.map((b) => el('div', { 'data-binding': b.name, class: b.enabled ? '' : 'muted' },
      `${b.name} ${b.version}${b.enabled ? '' : ' (off)'}`)));
    if (!items.length) cell.textContent = 'none';
  } catch (e) {
    cell.textContent = `not listed: ${explain(e).text}`;
  }
}

function runtimeRow(rt) {
  const actions = el('td', { class: 'actions' });
  const act = (verb, label, cls) => actions.append(el('button', { type: 'button', class: `${verb} ${cls || ''}`, 'data-action': verb, 'aria-label': `${label} runtime ${rt.id}`, onclick: () => runtimeAction(rt, verb) }, label));
  if (rt.status === 'idle') act('start', 'Start', 'primary');
  if (rt.status === 'running') { act('pause', 'Pause'); act('keepalive', 'Keep alive'); }
  if (rt.status === 'paused') act('resume', 'Resume');
  if (rt.status !== 'idle') act('reset', 'Reset', 'danger');
  const sb = rt.sandbox;
  const projectName = (projects.find((p) => p.id === rt.project_id) || (rt.project_id === me.project?.id ? me.project : null))?.name;
  const caps = el('td', { class: 'caps' }, '…');
  loadBindings(rt, caps);
  return el('tr', { 'data-id': rt.id, 'data-status': rt.status },
    el('td', {}, el('code', {}, rt.id)),
    el('td', {}, projectName ? `${projectName} (${rt.project_id})` : rt.project_id),
    el('td', {}, el('span', { class: `state state-${rt.status === 'idle' ? 'killed' : rt.status}` }, rt.status)),
    el('td', {}, rt.config?.template_id || 'base'),
    el('td', {}, sb ? el('a', { href: `#/sandbox/${sb.id}` }, el('code', {}, sb.sandboxID)) : (rt.sandbox_id ? el('code', {}, rt.sandbox_id) : '—')),
    caps,
    el('td', {}, fmtTime(rt.updated_at)),
    actions);
}

async function runtimeAction(rt, verb) {
  const go = async () => {
    clearError();
    $$(`#runtimes tr[data-id="${CSS.escape(rt.id)}"] button`).forEach((b) => { b.disabled = true; });
    try {
      const path = `${rtPath()}/${encodeURIComponent(rt.id)}/${verb}`;
      const secrets = $$('#runtime-secrets-list input:checked').map((i) => i.value);
      const updated = verb === 'start' ? await api('POST', path, secrets.length ? { secret_ids: secrets } : {}, { 'Idempotency-Key': newKey() })
        : await api('POST', path, {});
      $(`#runtimes tr[data-id="${CSS.escape(rt.id)}"]`)?.replaceWith(runtimeRow(updated));
    } catch (e) { showError(e); }
    loadRuntimes();
  };
  if (verb !== 'reset') { go(); return; }
  ask(`Reset runtime ${rt.id}? Its sandbox ends, with its processes and files; the next start makes a new one.`, 'Reset', go);
}
$('#runtimes-refresh').addEventListener('click', () => loadRuntimes());

// ---- the create wizard ----

const KNOWN_GPUS = ['T4', 'A10', 'L40', 'L40S', 'A100-40GB', 'A100-80GB', 'H100'];
let step = 1;
let rates = [];
let gpuAvailable = false;
let createKey = ''; // the Idempotency-Key of this wizard's create: a second click makes no second sandbox

async function openWizard() {
  step = 1;
  createKey = newKey();
  $('#wizard').reset();
  showTemplateFields();
  const cur = project();
  $('#project').replaceChildren(...(projects.length ? projects : [cur]).map((p) =>
    el('option', { value: p.id, selected: p.id === cur.id }, projectLabel(p))));
  $('#env').replaceChildren();
  clearFieldErrors();
  showStep();
  let summary = null;
  let catalog = null;
  let templates = null;
  try {
    [rates, summary, catalog, templates] = await Promise.all([
      api('GET', '/rates').then((r) => r.items || []),
      api('GET', '/observability/summary'),
      api('GET', '/template-catalog').catch(() => null),
      api('GET', '/templates').catch(() => null),
    ]);
  } catch (e) { showError(e); }
  if (catalog) renderTemplates(catalog, templates?.items || []);
  const provider = summary?.providers?.find((p) => p.default);
  gpuAvailable = !!provider?.capabilities?.gpu;
  renderGPUs(provider);
  renderSummary();
}

// renderTemplates lists the catalog by category (a template not built is
// shown, not chosen) and the project's own templates, base checked.
function renderTemplates(catalog, templates) {
  const choice = (value, name, text, built, size) => el('label', { class: `choice${built ? '' : ' disabled'}` },
    el('input', { type: 'radio', name: 'template', value, disabled: !built, checked: value === 'base' && built }), ' ',
    el('span', {}, el('b', {}, name), ' ', text, ' ',
      el('small', { class: 'muted' }, built ? (size ? `${(size / 2 ** 30).toFixed(1)} GB` : '') : `not built: sbx template build ${name}`)));
  const box = $('#template-catalog');
  box.replaceChildren();
  for (const cat of catalog.categories || []) {
    box.append(el('h2', {}, cat.name[0].toUpperCase() + cat.name.slice(1)),
      el('div', { class: 'choices' }, ...cat.templates.map((t) => choice(t.name, t.name, t.description, t.built, t.sizeBytes))));
  }
  const own = templates.filter((t) => t.projectID && t.version);
  if (own.length) {
    box.append(el('h2', {}, "Your project's"), el('div', { class: 'choices' },
      ...own.map((t) => choice(t.id, t.name, t.versions?.[0]?.source || '', true, t.versions?.[0]?.sizeBytes))));
  }
  if (!$('input[name=template]:checked')) $('input[name=template][value=custom]').checked = true;
  showTemplateFields();
}

function renderGPUs(provider) {
  const types = [...new Set(rates.filter((r) => r.resource === 'gpu' && r.gpu_type).map((r) => r.gpu_type))];
  const list = types.length ? types : KNOWN_GPUS;
  const box = $('#gpu-choices');
  box.replaceChildren(el('label', { class: 'choice' },
    el('input', { type: 'radio', name: 'gpu', value: '', checked: true }), ' ', el('span', {}, el('b', {}, 'No GPU'))));
  for (const t of list) {
    box.append(el('label', { class: `choice${gpuAvailable ? '' : ' disabled'}` },
      el('input', { type: 'radio', name: 'gpu', value: t, disabled: !gpuAvailable }), ' ',
      el('span', {}, el('b', {}, t), ' ', el('small', { class: 'muted' }, `${perHour(gpuPerSecond(t, 100, 1))} credits/h a card`))));
  }
  $('#gpu-note').textContent = gpuAvailable
    ? 'GPUs are given as whole cards or shares of one; a type the host lacks is refused when you create.'
    : `No GPU can be chosen: the default provider${provider ? ` (${provider.name})` : ''} reports no GPUs on this host. The operator can give it some (serve --gpus TYPE:COUNT, or what nvidia-smi finds).`;
}

function showStep() {
  for (const fs of $$('#wizard fieldset')) fs.hidden = fs.dataset.step !== String(step);
  for (const li of $$('[data-step-tab]')) {
    li.classList.toggle('current', li.dataset.stepTab === String(step));
    if (li.dataset.stepTab === String(step)) li.setAttribute('aria-current', 'step'); else li.removeAttribute('aria-current');
  }
  $('#back').disabled = step === 1;
  $('#next').hidden = step === 3;
  $('#create').hidden = step !== 3;
  if (step === 3) renderSummary();
}

$('#next').addEventListener('click', () => { if (step < 3) { step++; showStep(); } });
$('#back').addEventListener('click', () => { if (step > 1) { step--; showStep(); } });

$('#wizard').addEventListener('change', (ev) => {
  if (ev.target.name === 'gpu') {
    const on = ev.target.value !== '';
    $('#gpu-count').disabled = !on;
    $('#gpu-fraction').disabled = !on;
  }
  if (ev.target.name === 'template') showTemplateFields();
  renderSummary();
});
$('#wizard').addEventListener('input', (ev) => {
  // A field changed since the API named it: its complaint goes.
  const t = ev.target;
  if (t.getAttribute('aria-invalid')) t.removeAttribute('aria-invalid');
  const p = t.closest('.env-row')?.querySelector('.env-error') || t.nextElementSibling;
  if (p?.classList.contains('field-error')) p.textContent = '';
  renderSummary();
});

// showTemplateFields shows the fields of the image step's choice: a
// template's name, or an image's URI and credentials.
function showTemplateFields() {
  const v = $('input[name=template]:checked')?.value;
  $('#template-custom').disabled = v !== 'custom';
  $('#template-custom-fields').hidden = v !== 'custom';
  for (const id of ['#image-uri', '#image-username', '#image-password']) $(id).disabled = v !== 'image';
  $('#image-fields').hidden = v !== 'image';
}

function addEnvRow(k = '', v = '') {
  const n = $$('#env .env-row').length + 1;
  const r = el('div', { class: 'env-row' },
    el('label', { class: 'sr-only', for: `env-key-${n}` }, `Name ${n}`),
    el('input', { id: `env-key-${n}`, class: 'env-key', type: 'text', placeholder: 'NAME', value: k, autocomplete: 'off' }),
    el('label', { class: 'sr-only', for: `env-value-${n}` }, `Value ${n}`),
    el('input', { id: `env-value-${n}`, class: 'env-value', type: 'text', placeholder: 'value', value: v, autocomplete: 'off' }),
    el('button', { type: 'button', class: 'env-remove', 'aria-label': `Remove variable ${n}`, onclick: () => r.remove() }, 'Remove'),
    el('p', { class: 'field-error env-error' }));
  $('#env').append(r);
  r.querySelector('.env-key').focus();
}
$('#env-add').addEventListener('click', () => addEnvRow());

function template() {
  const v = $('input[name=template]:checked')?.value || 'base';
  return v === 'custom' ? $('#template-custom').value.trim() : v;
}

function gpuChoice() {
  const t = $('input[name=gpu]:checked')?.value;
  if (!t) return null;
  return { type: t, count: Number($('#gpu-count').value) || 1, fraction: Number($('#gpu-fraction').value) || 100 };
}

// image is the image step's image, when an image is chosen: its
// credentials go with this create only.
function image() {
  if ($('input[name=template]:checked')?.value !== 'image') return null;
  const img = { uri: $('#image-uri').value.trim() };
  const user = $('#image-username').value;
  const pass = $('#image-password').value;
  if (user !== '') img.username = user;
  if (pass !== '') img.password = pass;
  return img;
}

function request() {
  const img = image();
  const body = img ? { image: img } : { templateID: template() };
  const num = (id) => ($(id).value === '' ? undefined : Number($(id).value));
  body.cpu = num('#cpu');
  body.memoryMB = num('#memory');
  body.timeout = num('#timeout');
  if ($('#project').value) body.projectID = $('#project').value;
  if ($('#autopause').checked) body.autoPause = true;
  const gpu = gpuChoice();
  if (gpu) body.gpu = gpu;
  const env = {};
  for (const r of $$('#env .env-row')) {
    const k = r.querySelector('.env-key').value;
    if (k !== '') env[k] = r.querySelector('.env-value').value;
  }
  if (Object.keys(env).length) body.envVars = env;
  return body;
}

// rate is the newest effective price per second of a resource (and GPU
// type and share) in the price table, or null.
function rate(resource, match = () => true) {
  const now = Date.now();
  let best = null;
  for (const r of rates) {
    if (r.resource !== resource || !match(r) || Date.parse(r.effective_at) > now) continue;
    best = r; // the table is oldest first
  }
  return best ? Number(best.credits_per_second) : null;
}

function gpuPerSecond(type, share, count) {
  const exact = (t, s) => rate('gpu', (r) => (r.gpu_type || '') === t && (r.gpu_share || 0) === s);
  let p = exact(type, share);
  if (p == null && exact(type, 0) != null) p = exact(type, 0) * share / 100;
  if (p == null) p = exact('', share);
  if (p == null && exact('', 0) != null) p = exact('', 0) * share / 100;
  return (p || 0) * count;
}

const perHour = (perSecond) => (perSecond * 3600).toFixed(2);

function renderSummary() {
  const b = request();
  const cpu = (rate('cpu') || 0) * (b.cpu || 2);
  const mem = (rate('memory') || 0) * ((b.memoryMB || 512) / 1024);
  const gpu = b.gpu ? gpuPerSecond(b.gpu.type, b.gpu.fraction, b.gpu.count) : 0;
  const env = Object.keys(b.envVars || {});
  const items = [
    ['Image', b.image ? `${b.image.uri || '(no URI)'}${b.image.username ? ` as ${b.image.username}` : ''}` : b.templateID || '(none)'],
    ['GPU', b.gpu ? `${b.gpu.count}× ${b.gpu.type} at ${b.gpu.fraction} %` : 'none'],
    ['CPU and memory', `${b.cpu ?? 2} vCPU, ${b.memoryMB ?? 512} MiB`],
    ['Project', projectLabel(projects.find((p) => p.id === b.projectID) || project())],
    ['Timeout', `${b.timeout ?? 3600} s, then ${b.autoPause ? 'paused' : 'ended'}`],
    ['Environment', env.length ? env.join(', ') : 'none'],
    ['Estimated credits per hour', perHour(cpu + mem + gpu)],
  ];
  $('#summary').replaceChildren(...items.flatMap(([k, v]) => [el('dt', {}, k), el('dd', k.startsWith('Estimated') ? { id: 'estimate' } : {}, v)]));
}

function clearFieldErrors() {
  for (const p of $$('#wizard .field-error')) p.textContent = '';
  for (const i of $$('#wizard [aria-invalid]')) i.removeAttribute('aria-invalid');
}

// showFieldErrors puts each of the API's field errors next to the field it
// names, on that field's step; the first one's step is shown.
function showFieldErrors(fields) {
  let first = null;
  const place = (f) => {
    if (f.field.startsWith('envVars.')) {
      const name = f.field.slice('envVars.'.length);
      const r = $$('#env .env-row').find((x) => x.querySelector('.env-key').value === name);
      if (r) { r.querySelector('.env-error').textContent = f.message; r.querySelector('.env-key').setAttribute('aria-invalid', 'true'); return r; }
    }
    const key = f.field.split(/[.[]/)[0];
    const p = $(`#wizard .field-error[data-for="${CSS.escape(f.field)}"]`) || $(`#wizard .field-error[data-for="${CSS.escape(key)}"]`)
      || $('#wizard .field-error[data-for=""]');
    p.textContent = p.textContent ? `${p.textContent} ${f.message}` : (p.dataset.for ? f.message : `${f.field}: ${f.message}`);
    return p;
  };
  for (const f of fields) {
    const at = place(f);
    first ??= at;
  }
  const fs = first?.closest('fieldset');
  if (fs) { step = Number(fs.dataset.step); showStep(); }
}

$('#wizard').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  if (step !== 3) return;
  clearError();
  clearFieldErrors();
  const btn = $('#create');
  btn.disabled = true;
  try {
    await api('POST', '/sandboxes', request(), { 'Idempotency-Key': createKey });
    location.hash = '#/sandboxes';
  } catch (e) {
    if (e instanceof APIError && e.fields.length) showFieldErrors(e.fields);
    showError(e);
  } finally {
    btn.disabled = false;
  }
});

route();
