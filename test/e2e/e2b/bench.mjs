// The E2B JS SDK side of test/bench/e2b_test.go, with E2B_API_URL, E2B_SANDBOX_URL and
// E2B_API_KEY from the environment. Prints one JSON object of milliseconds:
//   node bench.mjs SDK first-command TEMPLATE RUNS
//     for each run, one at a time: Sandbox.create(TEMPLATE), then commands.run('echo hi') until
//     its first stdout chunk ({total, create, firstOutput}); each sandbox is killed after.
//   node bench.mjs SDK round-trip SANDBOX_ID RUNS
//     Sandbox.connect, then RUNS times commands.run('echo hi') to its end ({roundTrip}).
const [sdkModule, mode, target, runsArg] = process.argv.slice(2)
const { Sandbox } = await import(sdkModule)
const runs = Number(runsArg)

const out = {}
if (mode === 'first-command') {
  out.total = []
  out.create = []
  out.firstOutput = []
  for (let i = 0; i < runs; i++) {
    const start = performance.now()
    const sbx = await Sandbox.create(target, { timeoutMs: 300_000 })
    const created = performance.now()
    let first = 0
    await sbx.commands.run('echo hi', { onStdout: () => { first ||= performance.now() } })
    out.total.push(first - start)
    out.create.push(created - start)
    out.firstOutput.push(first - created)
    await sbx.kill()
  }
} else if (mode === 'round-trip') {
  const sbx = await Sandbox.connect(target)
  await sbx.commands.run('echo warm-up')
  out.roundTrip = []
  for (let i = 0; i < runs; i++) {
    const start = performance.now()
    await sbx.commands.run('echo hi')
    out.roundTrip.push(performance.now() - start)
  }
} else {
  throw new Error(`unknown mode ${mode}`)
}
console.log(JSON.stringify(out))
