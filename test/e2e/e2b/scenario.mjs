// The E2B JS SDK scenario of test/e2e/e2b_test.go, run once per SDK version against the local
// plane's E2B endpoint: `node scenario.mjs e2b-2.51.0`. It uses the SDK as an agent builder
// would, unmodified, with E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY from the environment, plus
//   E2B_TEMPLATE        the template (or warm pool) to create sandboxes from
//   E2B_OTHER_API_KEY   another tenant's key (another namespace)
// Each step prints one JSON line {step, ok, ms[, error]}; the first failure ends the run with
// exit code 1, after killing what it created.
import assert from 'node:assert/strict'

const sdkModule = process.argv[2]
const { Sandbox, CommandExitError, AuthenticationError, NotFoundError, SandboxError } = await import(sdkModule)

const template = process.env.E2B_TEMPLATE
const otherKey = process.env.E2B_OTHER_API_KEY
assert.ok(template && otherKey && process.env.E2B_API_KEY, 'E2B_TEMPLATE, E2B_API_KEY and E2B_OTHER_API_KEY are required')
const tag = `${sdkModule}-${process.pid}-${Date.now()}`
const created = new Map() // sandboxId -> apiKey, killed at the end whatever happened

async function step(name, fn) {
  const start = Date.now()
  try {
    await fn()
    console.log(JSON.stringify({ step: name, ok: true, ms: Date.now() - start }))
  } catch (err) {
    console.log(JSON.stringify({ step: name, ok: false, ms: Date.now() - start, error: String(err?.stack ?? err) }))
    throw err
  }
}

// eventually polls check (a condition, not a fixed wait) until it holds or timeoutMs passes.
async function eventually(what, timeoutMs, check) {
  const deadline = Date.now() + timeoutMs
  let last
  for (;;) {
    try {
      if (await check()) return
    } catch (err) {
      last = err
    }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms (last error: ${last})`)
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
}

async function create(opts = {}) {
  const sbx = await Sandbox.create(template, { timeoutMs: 600_000, ...opts })
  created.set(sbx.sandboxId, opts.apiKey)
  return sbx
}

async function run() {
  let sbx
  await step('create with envs and metadata', async () => {
    sbx = await create({ envs: { GREETING: 'hello from the claim' }, metadata: { suite: 'e2e', tag, 'owner name': 'a&b = c' } })
    assert.match(sbx.sandboxId, /^e2b-/)
  })

  await step('run with cwd, envs and onStdout', async () => {
    const chunks = []
    const res = await sbx.commands.run('echo "$GREETING/$LOCAL"; pwd', {
      cwd: '/tmp',
      envs: { LOCAL: 'per command' },
      onStdout: (data) => chunks.push(data),
    })
    assert.equal(res.exitCode, 0)
    assert.equal(res.stdout, 'hello from the claim/per command\n/tmp\n')
    assert.equal(chunks.join(''), res.stdout)
  })

  await step('a failing command is a CommandExitError', async () => {
    await assert.rejects(sbx.commands.run('echo to-stderr >&2; exit 3'), (err) => {
      assert.ok(err instanceof CommandExitError, `got ${err?.name}: ${err}`)
      assert.equal(err.exitCode, 3)
      assert.match(err.stderr, /to-stderr/)
      return true
    })
  })

  await step('a background command fed through stdin, then killed', async () => {
    let out = ''
    const handle = await sbx.commands.run('cat', { background: true, stdin: true, onStdout: (d) => (out += d) })
    assert.ok(handle.pid > 0)
    await sbx.commands.sendStdin(handle.pid, 'ping\n')
    await eventually('cat echoes its stdin', 30_000, () => out.includes('ping\n'))
    const listed = await sbx.commands.list()
    assert.ok(listed.some((p) => p.pid === handle.pid), `pid ${handle.pid} not in ${JSON.stringify(listed)}`)
    assert.equal(await handle.kill(), true)
    await assert.rejects(handle.wait(), (err) => err instanceof CommandExitError || err instanceof SandboxError)
    await eventually('the killed command leaves the list', 30_000, async () =>
      !(await sbx.commands.list()).some((p) => p.pid === handle.pid))
  })

  await step('connect to a running command; close its stdin', async () => {
    const handle = await sbx.commands.run('cat; echo done', { background: true, stdin: true })
    const connected = await sbx.commands.connect(handle.pid)
    await handle.sendStdin('abc')
    await handle.closeStdin()
    assert.equal((await connected.wait()).stdout, 'abcdone\n')
  })

  await step('a terminal, resized', async () => {
    let out = ''
    const decoder = new TextDecoder()
    const term = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => (out += decoder.decode(d)) })
    await sbx.pty.resize(term.pid, { cols: 100, rows: 30 })
    await sbx.pty.sendInput(term.pid, new TextEncoder().encode('stty size; exit\n'))
    await term.wait()
    assert.match(out, /30 100/)
  })

  await step('text and binary files written and read', async () => {
    const text = 'line one\nline two — ünïcode\n'
    await sbx.files.write('/tmp/e2e/notes.txt', text)
    assert.equal(await sbx.files.read('/tmp/e2e/notes.txt'), text)
    const bytes = new Uint8Array(4096)
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 7) % 256
    await sbx.files.write('/tmp/e2e/blob.bin', bytes.buffer)
    const back = await sbx.files.read('/tmp/e2e/blob.bin', { format: 'bytes' })
    assert.deepEqual(Buffer.from(back), Buffer.from(bytes))
    const sum = await sbx.commands.run('wc -c < /tmp/e2e/blob.bin')
    assert.equal(sum.stdout.trim(), '4096')
  })

  await step('list, exists, makeDir, rename, remove', async () => {
    const names = (await sbx.files.list('/tmp/e2e')).map((e) => e.name).sort()
    assert.deepEqual(names, ['blob.bin', 'notes.txt'])
    assert.equal(await sbx.files.exists('/tmp/e2e/notes.txt'), true)
    assert.equal(await sbx.files.exists('/tmp/e2e/absent'), false)
    assert.equal(await sbx.files.makeDir('/tmp/e2e/sub/dir'), true)
    assert.equal(await sbx.files.makeDir('/tmp/e2e/sub/dir'), false)
    const moved = await sbx.files.rename('/tmp/e2e/notes.txt', '/tmp/e2e/sub/moved.txt')
    assert.equal(moved.name, 'moved.txt')
    assert.equal(await sbx.files.exists('/tmp/e2e/notes.txt'), false)
    await sbx.files.remove('/tmp/e2e/sub')
    assert.equal(await sbx.files.exists('/tmp/e2e/sub'), false)
  })

  await step('getInfo', async () => {
    const info = await sbx.getInfo()
    assert.equal(info.sandboxId, sbx.sandboxId)
    assert.equal(info.templateId, template)
    assert.equal(info.state, 'running')
    assert.deepEqual(info.metadata, { suite: 'e2e', tag, 'owner name': 'a&b = c' })
    assert.ok(info.endAt > info.startedAt, `endAt ${info.endAt} not after startedAt ${info.startedAt}`)
  })

  await step('list by metadata', async () => {
    const page = await Sandbox.list({ query: { metadata: { tag, 'owner name': 'a&b = c' } } }).nextItems()
    assert.deepEqual(page.map((s) => s.sandboxId), [sbx.sandboxId])
    assert.equal(page[0].metadata.suite, 'e2e')
    const none = await Sandbox.list({ query: { metadata: { tag: `${tag}-other` } } }).nextItems()
    assert.deepEqual(none, [])
  })

  await step('setTimeout: the sandbox is gone after it', async () => {
    const short = await create()
    await short.setTimeout(3_000)
    await eventually('the sandbox is gone after its timeout', 90_000, async () => {
      await assert.rejects(Sandbox.getInfo(short.sandboxId), (err) => err instanceof NotFoundError)
      return true
    })
    assert.equal(await Sandbox.kill(short.sandboxId), false)
  })

  await step('another tenant neither sees, runs in nor kills it', async () => {
    const other = { apiKey: otherKey }
    await assert.rejects(Sandbox.getInfo(sbx.sandboxId, other), (err) => err instanceof NotFoundError)
    await assert.rejects(Sandbox.connect(sbx.sandboxId, other), (err) => err instanceof NotFoundError)
    assert.equal(await Sandbox.kill(sbx.sandboxId, other), false)
    const theirs = await Sandbox.list(other).nextItems()
    assert.ok(!theirs.some((s) => s.sandboxId === sbx.sandboxId), 'the other tenant lists our sandbox')
    // Their own sandbox's access token, sent for ours: absent to them.
    const mine = await create(other)
    const forged = new Sandbox({ sandboxId: sbx.sandboxId, envdVersion: (await sbx.getInfo()).envdVersion, envdAccessToken: mine.envdAccessToken, apiKey: otherKey })
    await assert.rejects(forged.commands.run('echo must-not-run'), (err) => err instanceof SandboxError)
    assert.equal(await mine.kill(), true)
    created.delete(mine.sandboxId)
    assert.equal((await sbx.commands.run('echo still mine')).stdout, 'still mine\n')
  })

  await step('a wrong access token is refused', async () => {
    const wrong = new Sandbox({ sandboxId: sbx.sandboxId, envdVersion: (await sbx.getInfo()).envdVersion, envdAccessToken: 'not-a-token' })
    await assert.rejects(wrong.commands.run('echo must-not-run'), (err) => err instanceof AuthenticationError || err instanceof SandboxError)
    await assert.rejects(wrong.files.read('/etc/hostname'), (err) => err instanceof AuthenticationError || err instanceof SandboxError)
  })

  await step('an unknown key is refused, an unknown template is not found', async () => {
    await assert.rejects(Sandbox.list({ apiKey: 'e2b_' + '0'.repeat(40) }).nextItems(), (err) => err instanceof AuthenticationError)
    await assert.rejects(Sandbox.create('no-such-template'), (err) => /not found/.test(String(err)))
  })

  await step('pause, then connect and run again', async () => {
    assert.equal(await sbx.pause(), true)
    assert.equal((await sbx.getInfo()).state, 'paused')
    const again = await Sandbox.connect(sbx.sandboxId)
    assert.equal((await again.getInfo()).state, 'running')
    const res = await again.commands.run('echo "back: $GREETING"')
    assert.equal(res.stdout, 'back: hello from the claim\n')
  })

  await step('kill, then kill of a killed sandbox is false', async () => {
    assert.equal(await sbx.kill(), true)
    created.delete(sbx.sandboxId)
    assert.equal(await Sandbox.kill(sbx.sandboxId), false)
  })
}

try {
  await run()
} catch {
  process.exitCode = 1
} finally {
  for (const [id, apiKey] of created) {
    await Sandbox.kill(id, apiKey ? { apiKey } : undefined).catch(() => {})
  }
}
