// The unmodified OpenSandbox SDK (npm @alibaba-group/opensandbox) against a
// real sbx serve with gVisor sandboxes. e2e TestOpenSandboxSDKLocal runs it
// with OPEN_SANDBOX_DOMAIN (<serve>/opensandbox) and OPEN_SANDBOX_API_KEY,
// which the SDK reads itself, and OSB_OTHER_KEY, another org's key.
import test from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox, SandboxManager, SandboxApiException, ConnectionConfig } from '@alibaba-group/opensandbox'

const run = `${process.pid}`
const sandboxes = []
test.after(async () => {
  for (const s of sandboxes) await s.kill().catch(() => {})
})

/** waitFor polls fn until it answers truthy (a hang guard, not a timing assertion). */
async function waitFor (what, fn) {
  for (let i = 0; i < 600; i++) {
    const v = await fn().catch(() => undefined)
    if (v) return v
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`never: ${what}`)
}

/** refused runs fn, which must fail with an API error of status naming says. */
async function refused (fn, status, says) {
  await assert.rejects(fn, (err) => {
    assert.ok(err instanceof SandboxApiException, `${err} is not a SandboxApiException`)
    assert.equal(err.statusCode, status, `${err.message}`)
    assert.match(err.message, says)
    return true
  })
}

let sbx
test('create from a template with metadata, env, resources and a timeout; getInfo; list by metadata', async () => {
  sbx = await Sandbox.create({
    image: 'base',
    metadata: { run, purpose: 'sdk' },
    env: { GREETING: 'hello from opensandbox' },
    resource: { cpu: '1', memory: '1Gi' },
    timeoutSeconds: 600
  })
  sandboxes.push(sbx)
  const info = await sbx.getInfo()
  assert.equal(info.id, sbx.id)
  assert.equal(info.status.state, 'Running')
  assert.deepEqual(info.metadata, { run, purpose: 'sdk' })
  assert.deepEqual(info.entrypoint, ['tail', '-f', '/dev/null'])
  assert.equal(info.image.uri, 'base')
  const left = info.expiresAt.getTime() - Date.now()
  assert.ok(left > 500_000 && left <= 600_000, `expiresAt ${info.expiresAt} is not 10 minutes away`)
  const manager = SandboxManager.create()
  const found = await manager.listSandboxInfos({ metadata: { run, purpose: 'sdk' }, states: ['Running'] })
  assert.deepEqual(found.items.map((s) => s.id), [sbx.id])
  assert.equal(found.pagination.totalItems, 1)
  const none = await manager.listSandboxInfos({ metadata: { run, purpose: 'other' } })
  assert.equal(none.items.length, 0)
  await manager.close()
})

test('commands: output streamed line by line, exit codes, env, cwd', async () => {
  const seen = []
  const ok = await sbx.commands.run('echo "$GREETING"; echo second; pwd', { workingDirectory: '/tmp' }, { onStdout: (m) => seen.push(m.text) })
  assert.equal(ok.exitCode, 0)
  assert.deepEqual(seen, ['hello from opensandbox', 'second', '/tmp'])
  assert.ok(ok.id, 'the init event carries the command ID')
  const bad = await sbx.commands.run('echo "oops $X" >&2; exit 3', { envs: { X: 'y' } })
  assert.equal(bad.exitCode, 3)
  assert.deepEqual(bad.logs.stderr.map((m) => m.text), ['oops y'])
  assert.equal(bad.error.name, 'CommandExecError')
  const status = await sbx.commands.getCommandStatus(ok.id)
  assert.equal(status.running, false)
  assert.equal(status.exitCode, 0)
})

test('background commands: status, logs by cursor, interrupt', async () => {
  const bg = await sbx.commands.run('printf "one\\ntwo\\n"', { background: true })
  assert.ok(bg.id)
  await waitFor('the background command to end', async () => !(await sbx.commands.getCommandStatus(bg.id)).running)
  const logs = await sbx.commands.getBackgroundCommandLogs(bg.id)
  assert.equal(logs.content, 'one\ntwo\n')
  assert.equal(logs.cursor, 2)
  const rest = await sbx.commands.getBackgroundCommandLogs(bg.id, 1)
  assert.equal(rest.content, 'two\n')
  const sleeper = await sbx.commands.run('sleep 1000', { background: true })
  assert.equal((await sbx.commands.getCommandStatus(sleeper.id)).running, true)
  await sbx.commands.interrupt(sleeper.id)
  await waitFor('the interrupted command to end', async () => !(await sbx.commands.getCommandStatus(sleeper.id)).running)
})

test('files: write, read, info, list, search, move, replace, directories, delete', async () => {
  const dir = `/tmp/osb-${run}`
  await sbx.files.createDirectories([{ path: `${dir}/sub`, mode: 755 }])
  await sbx.files.writeFiles([{ path: `${dir}/a.txt`, data: 'hello files', mode: 640 }, { path: `${dir}/sub/b.md`, data: new Uint8Array([98, 101, 101]) }])
  assert.equal(await sbx.files.readFile(`${dir}/a.txt`), 'hello files')
  assert.equal(await sbx.files.readFile(`${dir}/a.txt`, { range: 'bytes=6-10' }), 'files')
  const info = await sbx.files.getFileInfo([`${dir}/a.txt`])
  assert.equal(info[`${dir}/a.txt`].size, 11)
  assert.equal(info[`${dir}/a.txt`].mode, 640)
  assert.equal(info[`${dir}/a.txt`].type, 'file')
  assert.ok(info[`${dir}/a.txt`].modifiedAt instanceof Date)
  const list = await sbx.files.listDirectory({ path: dir, depth: 2 })
  assert.deepEqual(list.map((f) => f.path), [`${dir}/a.txt`, `${dir}/sub`, `${dir}/sub/b.md`])
  const found = await sbx.files.search({ path: dir, pattern: '*.md' })
  assert.deepEqual(found.map((f) => f.path), [`${dir}/sub/b.md`])
  await sbx.files.moveFiles([{ src: `${dir}/a.txt`, dest: `${dir}/c.txt` }])
  const replaced = await sbx.files.replaceContentsDetailed([{ path: `${dir}/c.txt`, oldContent: 'files', newContent: 'sbx' }])
  assert.deepEqual(replaced, [{ path: `${dir}/c.txt`, replacedCount: 1 }])
  assert.equal(await sbx.files.readFile(`${dir}/c.txt`), 'hello sbx')
  await sbx.files.deleteFiles([`${dir}/c.txt`])
  await refused(() => sbx.files.getFileInfo([`${dir}/c.txt`]), 404, /not found/)
  await sbx.files.deleteDirectories([`${dir}/sub`])
  assert.deepEqual((await sbx.files.listDirectory({ path: dir })).map((f) => f.path), [])
})

test('endpoints: execd with its token, another port through serve', async () => {
  const execd = await sbx.getEndpoint(44772)
  assert.ok(execd.headers['X-EXECD-ACCESS-TOKEN'])
  const server = 'perl -MIO::Socket::INET -e \'$s=IO::Socket::INET->new(LocalPort=>8000,Listen=>5,ReuseAddr=>1) or die; ' +
    'while($c=$s->accept){while(<$c>){last if /^\\r?\\n$/} print $c "HTTP/1.0 200 OK\\r\\nContent-Length: 9\\r\\n\\r\\nfrom 8000"; close $c}\''
  await sbx.commands.run(server, { background: true })
  const ep = await sbx.getEndpoint(8000)
  const url = await sbx.getEndpointUrl(8000)
  const body = await waitFor('the app on port 8000', async () => {
    const res = await fetch(url + '/', { headers: ep.headers })
    return res.ok ? res.text() : undefined
  })
  assert.equal(body, 'from 8000')
  const res = await fetch(url + '/')
  assert.equal(res.status, 401, 'a private port without the traffic token')
  const wrong = await fetch(`${sbx.connectionConfig.protocol}://${execd.endpoint}/ping`, { headers: { 'X-EXECD-ACCESS-TOKEN': 'wrong' } })
  assert.equal(wrong.status, 401)
})

test('pause, resume: the files and the sandbox stay', async () => {
  await sbx.files.writeFiles([{ path: '/tmp/kept', data: 'kept' }])
  await sbx.pause()
  assert.equal((await sbx.getInfo()).status.state, 'Paused')
  await refused(() => sbx.pause(), 409, /already paused/)
  sbx = await sbx.resume()
  assert.equal((await sbx.getInfo()).status.state, 'Running')
  assert.equal(await sbx.files.readFile('/tmp/kept'), 'kept')
  assert.equal((await sbx.commands.run('echo back')).logs.stdout[0].text, 'back')
})

test('renew: the expiry moves', async () => {
  const renewed = await sbx.renew(1200)
  const left = renewed.expiresAt.getTime() - Date.now()
  assert.ok(left > 1_100_000 && left <= 1_201_000, `expiresAt ${renewed.expiresAt} is not 20 minutes away`)
  assert.equal((await sbx.getInfo()).expiresAt.getTime(), renewed.expiresAt.getTime())
})

test('bad input is a 4xx naming the problem', async () => {
  await refused(() => Sandbox.create({ image: 'base', entrypoint: ['python', 'app.py'], skipHealthCheck: true }), 400, /entrypoint/)
  await refused(() => Sandbox.create({ image: 'no-such-template', skipHealthCheck: true }), 400, /image\.uri/)
  await refused(() => Sandbox.create({ image: 'base', resource: { cpu: '1', memory: 'lots' }, skipHealthCheck: true }), 400, /resourceLimits\.memory/)
  await refused(() => Sandbox.create({ image: 'base', networkPolicy: { defaultAction: 'deny', egress: [{ action: 'maybe', target: 'x.com' }] }, skipHealthCheck: true }),
    400, /networkPolicy\.egress\[0\]\.action/)
  await refused(() => sbx.getEndpoint(0), 400, /port/)
  await refused(() => sbx.getSignedEndpoint(8000, Math.floor(Date.now() / 1000) + 60), 400, /expires/)
  await refused(() => sbx.sandboxes.renewSandboxExpiration(sbx.id, { expiresAt: new Date(Date.now() - 1000).toISOString() }), 400, /expiresAt/)
  await refused(() => sbx.commands.getCommandStatus('nope'), 400, /nope/)
  await refused(() => Sandbox.connect({ sandboxId: 'nosuchsandbox' }), 404, /nosuchsandbox/)
})

test("another org's key reaches nothing", async () => {
  const other = new ConnectionConfig({ apiKey: process.env.OSB_OTHER_KEY })
  const manager = SandboxManager.create({ connectionConfig: other })
  await refused(() => manager.getSandboxInfo(sbx.id), 404, new RegExp(sbx.id))
  await refused(() => manager.killSandbox(sbx.id), 404, new RegExp(sbx.id))
  await refused(() => Sandbox.connect({ sandboxId: sbx.id, connectionConfig: other }), 404, new RegExp(sbx.id))
  const listed = await manager.listSandboxInfos({ metadata: { run } })
  assert.equal(listed.items.length, 0)
  await manager.close()
  await refused(() => SandboxManager.create({ connectionConfig: { apiKey: 'sbx_wrong' } }).getSandboxInfo(sbx.id), 401, /.+/)
  assert.equal((await sbx.getInfo()).status.state, 'Running')
})

test('kill: the sandbox is terminated and leaves the list', async () => {
  await sbx.kill()
  const manager = SandboxManager.create()
  const info = await manager.getSandboxInfo(sbx.id)
  assert.equal(info.status.state, 'Terminated')
  const listed = await manager.listSandboxInfos({ metadata: { run } })
  assert.equal(listed.items.length, 0)
  await manager.close()
})
