// The unmodified E2B SDKs (npm e2b, @e2b/code-interpreter) against a real
// sbx serve with gVisor sandboxes. e2e TestE2BSDKLocal runs it with
// E2B_API_URL (<serve>/e2b) and E2B_API_KEY set, NODE_EXTRA_CA_CERTS
// trusting serve's certificate and resolve.mjs resolving the sandbox hosts;
// with E2B_SANDBOX_URL set too, envd and the code interpreter are reached
// through serve's one address, by the SDK's E2b-Sandbox-Id headers.
import test from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox, CommandExitError, FileNotFoundError, FileType, FilesystemEventType } from 'e2b'
import { Sandbox as CodeSandbox } from '@e2b/code-interpreter'

const frontDoor = !!process.env.E2B_SANDBOX_URL
const run = `${process.pid}-${frontDoor ? 'front' : 'host'}`
const sandboxes = []
test.after(async () => {
  for (const sbx of sandboxes) await sbx.kill().catch(() => {})
})

/** waitFor polls fn until it answers truthy (a hang guard, not a timing assertion). */
async function waitFor (what, fn) {
  for (let i = 0; i < 600; i++) {
    const v = await fn()
    if (v) return v
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`never: ${what}`)
}

let sbx
test('create with metadata, envs and a timeout; getInfo; list with a metadata filter and pages', async () => {
  sbx = await Sandbox.create('base', { timeoutMs: 600_000, metadata: { run, purpose: 'sdk' }, envs: { GREETING: 'hello from e2b' } })
  sandboxes.push(sbx)
  assert.match(sbx.sandboxId, /^[a-z0-9]+$/)
  const info = await sbx.getInfo()
  assert.equal(info.sandboxId, sbx.sandboxId)
  assert.equal(info.templateId, 'base')
  assert.equal(info.state, 'running')
  assert.deepEqual(info.metadata, { run, purpose: 'sdk' })
  const left = info.endAt.getTime() - Date.now()
  assert.ok(left > 500_000 && left <= 600_000, `endAt ${info.endAt} is not 10 minutes away`)
  const r = await sbx.commands.run('echo $GREETING')
  assert.equal(r.stdout, 'hello from e2b\n')

  const other = await Sandbox.create('base', { metadata: { run, purpose: 'other' } })
  sandboxes.push(other)
  const found = await Sandbox.list({ query: { metadata: { run, purpose: 'sdk' } } }).nextItems()
  assert.deepEqual(found.map((s) => s.sandboxId), [sbx.sandboxId])
  const pages = Sandbox.list({ query: { metadata: { run } }, limit: 1 })
  const seen = []
  while (pages.hasNext) seen.push(...(await pages.nextItems()).map((s) => s.sandboxId))
  assert.deepEqual(seen.sort(), [sbx.sandboxId, other.sandboxId].sort())
  await other.kill()
  assert.equal(await Sandbox.kill(other.sandboxId), false, 'a killed sandbox is not found')
  await assert.rejects(Sandbox.getInfo(other.sandboxId), { name: 'SandboxNotFoundError' })
})

test('setTimeout, getMetrics, connect', async () => {
  await sbx.setTimeout(900_000)
  const info = await sbx.getInfo()
  assert.ok(info.endAt.getTime() - Date.now() > 800_000)
  const metrics = await sbx.getMetrics()
  assert.ok(metrics.length >= 1 && metrics[0].memTotal > 0 && metrics[0].memUsed > 0, JSON.stringify(metrics))
  const again = await Sandbox.connect(sbx.sandboxId)
  assert.equal((await again.commands.run('echo again')).stdout, 'again\n')
  assert.equal(await again.isRunning(), true)
})

test('commands: exit codes, cwd and envs, streaming, background, stdin, connect, list, kill', async () => {
  const r = await sbx.commands.run('pwd; echo $A; echo err >&2', { cwd: '/tmp', envs: { A: 'b' } })
  assert.equal(r.exitCode, 0)
  assert.equal(r.stdout, '/tmp\nb\n')
  assert.equal(r.stderr, 'err\n')
  await assert.rejects(sbx.commands.run('exit 3'), (e) => e instanceof CommandExitError && e.exitCode === 3)

  const chunks = []
  await sbx.commands.run('for i in 1 2 3; do echo $i; sleep 0.1; done', { onStdout: (d) => chunks.push(d) })
  assert.equal(chunks.join(''), '1\n2\n3\n')

  const cat = await sbx.commands.run('cat', { background: true, stdin: true })
  await sbx.commands.sendStdin(cat.pid, 'via stdin\n')
  await sbx.commands.closeStdin(cat.pid)
  assert.equal((await cat.wait()).stdout, 'via stdin\n')

  const sleeper = await sbx.commands.run('echo started; sleep 600', { background: true, timeoutMs: 0 })
  await sleeper.disconnect()
  const listed = await sbx.commands.list()
  assert.ok(listed.some((p) => p.pid === sleeper.pid && p.args.includes('echo started; sleep 600')), JSON.stringify(listed))
  const seen = []
  const attached = await sbx.commands.connect(sleeper.pid, { onStdout: (d) => seen.push(d), timeoutMs: 0 })
  await waitFor('the replayed output', () => seen.join('').includes('started'))
  assert.equal(await sbx.commands.kill(sleeper.pid), true)
  await assert.rejects(attached.wait(), (e) => e instanceof CommandExitError && e.exitCode === -1)
  assert.equal(await sbx.commands.kill(sleeper.pid), false, 'an ended process is not found')
})

test('files: text, a 5 MB binary, streams, list, exists, getInfo, makeDir, rename, remove, watchDir, errors', async () => {
  const dir = `/tmp/files-${run}`
  assert.equal(await sbx.files.makeDir(dir), true)
  assert.equal(await sbx.files.makeDir(dir), false, 'an existing directory')
  const w = await sbx.files.write(`${dir}/a.txt`, 'hello')
  assert.equal(w.path, `${dir}/a.txt`)
  assert.equal(await sbx.files.read(`${dir}/a.txt`), 'hello')

  const big = new Uint8Array(5 << 20)
  for (let i = 0; i < big.length; i++) big[i] = (i * 7919) % 251
  await sbx.files.write(`${dir}/big.bin`, big.buffer)
  assert.deepEqual(await sbx.files.read(`${dir}/big.bin`, { format: 'bytes' }), big)
  const stream = await sbx.files.read(`${dir}/big.bin`, { format: 'stream' })
  let streamed = 0
  for await (const chunk of stream) streamed += chunk.length
  assert.equal(streamed, big.length)
  await sbx.files.write(`${dir}/streamed.txt`, new Blob(['from a ', 'stream']).stream())
  assert.equal(await sbx.files.read(`${dir}/streamed.txt`), 'from a stream')
  await sbx.files.write([{ path: `${dir}/m1.txt`, data: 'one' }, { path: `${dir}/sub/m2.txt`, data: 'two' }])
  assert.equal(await sbx.files.read(`${dir}/sub/m2.txt`), 'two')

  const entries = await sbx.files.list(dir)
  assert.deepEqual(entries.map((e) => e.name).sort(), ['a.txt', 'big.bin', 'm1.txt', 'streamed.txt', 'sub'])
  assert.equal(entries.find((e) => e.name === 'sub').type, FileType.DIR)
  const info = await sbx.files.getInfo(`${dir}/big.bin`)
  assert.equal(info.size, big.length)
  assert.equal(info.type, FileType.FILE)
  assert.equal(await sbx.files.exists(`${dir}/a.txt`), true)
  assert.equal(await sbx.files.exists(`${dir}/nope`), false)
  const moved = await sbx.files.rename(`${dir}/a.txt`, `${dir}/b.txt`)
  assert.equal(moved.path, `${dir}/b.txt`)
  await sbx.files.remove(`${dir}/b.txt`)
  await assert.rejects(sbx.files.read(`${dir}/b.txt`), (e) => e instanceof FileNotFoundError)
  await assert.rejects(sbx.files.getInfo(`${dir}/b.txt`), (e) => e instanceof FileNotFoundError)

  const events = []
  const watch = await sbx.files.watchDir(dir, (e) => events.push(e), { recursive: true, timeoutMs: 0 })
  await sbx.files.write(`${dir}/sub/watched.txt`, 'x')
  await waitFor('a watch event', () => events.some((e) => e.name === 'sub/watched.txt' && e.type === FilesystemEventType.CREATE))
  await watch.stop()
})

test('signed upload and download URLs', { skip: frontDoor && 'E2B_SANDBOX_URL: the SDK puts no sandbox in a signed URL' }, async () => {
  const path = `/tmp/signed-${run}.txt`
  const up = await sbx.uploadUrl(path, { useSignatureExpiration: 60 })
  const form = new FormData()
  form.append('file', new Blob(['signed upload']), path)
  const res = await fetch(up, { method: 'POST', body: form })
  assert.equal(res.status, 200, await res.text())
  const down = await sbx.downloadUrl(path)
  assert.equal(await (await fetch(down)).text(), 'signed upload')
  const forged = new URL(down)
  forged.searchParams.set('path', '/etc/shadow')
  assert.equal((await fetch(forged)).status, 401)
})

test('PTY: create, input, resize, kill', async () => {
  let out = ''
  const decoder = new TextDecoder()
  const pty = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => { out += decoder.decode(d) }, timeoutMs: 0 })
  await sbx.pty.sendInput(pty.pid, new TextEncoder().encode('stty size; echo pty-$((6*7))\n'))
  await waitFor('the PTY to answer', () => out.includes('24 80') && out.includes('pty-42'))
  await sbx.pty.resize(pty.pid, { cols: 100, rows: 30 })
  await sbx.pty.sendInput(pty.pid, new TextEncoder().encode('stty size\n'))
  await waitFor('the resized PTY', () => out.includes('30 100'))
  assert.equal(await sbx.pty.kill(pty.pid), true)
  await assert.rejects(pty.wait())
})

test('snapshots, fork and the network policy', async () => {
  await sbx.files.write('/tmp/state.txt', 'before the snapshot')
  const snap = await sbx.createSnapshot({ name: `snap-${run}` })
  assert.deepEqual(snap.names, [`snap-${run}`])
  const listed = await Sandbox.listSnapshots({ sandboxId: sbx.sandboxId }).nextItems()
  assert.ok(listed.some((s) => s.snapshotId === snap.snapshotId), JSON.stringify(listed))
  const restored = await Sandbox.create(snap.snapshotId, { metadata: { run } })
  sandboxes.push(restored)
  assert.equal(await restored.files.read('/tmp/state.txt'), 'before the snapshot')
  await restored.kill()
  assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId), true)
  assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId), false, 'a deleted snapshot is not found')

  const [child] = await sbx.fork()
  assert.ok(child instanceof Sandbox, String(child))
  sandboxes.push(child)
  assert.equal(await child.files.read('/tmp/state.txt'), 'before the snapshot')
  await child.kill()

  await sbx.updateNetwork({ denyOut: ['0.0.0.0/0'] })
  assert.deepEqual((await sbx.getInfo()).network.denyOut, ['0.0.0.0/0'])
  await sbx.updateNetwork({})
  assert.equal((await sbx.getInfo()).network.denyOut, undefined)
})

test('pause and resume keep a file and a running process', async () => {
  await sbx.files.write('/tmp/kept.txt', 'kept')
  const counter = await sbx.commands.run('i=0; while true; do i=$((i+1)); echo $i > /tmp/count; sleep 0.2; done', { background: true, timeoutMs: 0 })
  await counter.disconnect()
  await waitFor('the counter to count', () => sbx.files.exists('/tmp/count'))
  assert.equal(await sbx.pause(), true)
  assert.equal((await Sandbox.getInfo(sbx.sandboxId)).state, 'paused')
  assert.equal(await Sandbox.pause(sbx.sandboxId), false, 'a paused sandbox is already paused')
  const resumed = await Sandbox.connect(sbx.sandboxId, { timeoutMs: 600_000 })
  assert.equal((await resumed.getInfo()).state, 'running')
  assert.equal(await resumed.files.read('/tmp/kept.txt'), 'kept')
  assert.ok((await resumed.commands.list()).some((p) => p.pid === counter.pid), 'the counter runs on')
  const before = Number(await resumed.files.read('/tmp/count'))
  await waitFor('the counter to count on', async () => Number(await resumed.files.read('/tmp/count')) > before)
})

test('kill', async () => {
  await sbx.kill()
  assert.equal(await sbx.isRunning(), false)
  assert.equal((await Sandbox.list({ query: { metadata: { run } } }).nextItems()).length, 0)
})

test('runCode keeps state and returns a matplotlib chart as PNG', async () => {
  const ci = await CodeSandbox.create({ timeoutMs: 600_000, metadata: { run } })
  sandboxes.push(ci)
  await ci.runCode('x = 41')
  const ex = await ci.runCode('x + 1')
  assert.equal(ex.text, '42')
  const out = []
  await ci.runCode('print("streamed")', { onStdout: (m) => out.push(m.line) })
  assert.deepEqual(out, ['streamed\n'])
  const chart = await ci.runCode('import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()')
  const png = chart.results.find((r) => r.png)
  assert.ok(png, JSON.stringify(chart.results.map((r) => Object.keys(r))))
  assert.equal(Buffer.from(png.png, 'base64').subarray(1, 4).toString(), 'PNG')
  const err = await ci.runCode('1/0')
  assert.equal(err.error.name, 'ZeroDivisionError')
  const bash = await ci.createCodeContext({ language: 'bash' })
  await ci.runCode('cd /tmp; Y=7', { context: bash })
  assert.equal((await ci.runCode('echo $PWD $Y', { context: bash })).logs.stdout.join(''), '/tmp 7\n')
  assert.ok((await ci.listCodeContexts()).some((c) => c.id === bash.id))
  await ci.removeCodeContext(bash)
  await ci.kill()
})
