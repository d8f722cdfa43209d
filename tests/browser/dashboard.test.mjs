// The dashboard in a real browser (Debian's Chromium through playwright-core): the key prompt, a
// kickoff, the live timeline with the fake LLM's final answer, the run's row turning completed, a
// reload without duplicates, two evaluations' answers side by side, and (with AGENTD_PID_FILE) a
// server restart in the middle of a run.
//
// Started by tests/browser/run.sh, which provides:
//   AGENTD_URL, AGENTD_API_KEY  the server and its key
//   FAKE_LLM_REPLY              the final answer the fake LLM gives
//   AGENTD_PID_FILE             optional: the pid of `agentd serve`, restarted by run.sh when it exits
//   BROWSER_ARTIFACTS           where screenshots go
//   CHROMIUM                    the browser (default /usr/bin/chromium)

import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const required = (name) => {
  const value = process.env[name];
  if (!value) {
    console.error(`dashboard.test: ${name} is not set (run tests/browser/run.sh)`);
    process.exit(2);
  }
  return value;
};

const base = required("AGENTD_URL");
const apiKey = required("AGENTD_API_KEY");
const reply = required("FAKE_LLM_REPLY");
const pidFile = process.env.AGENTD_PID_FILE || "";
const artifacts = process.env.BROWSER_ARTIFACTS || tmpdir();
const executablePath = process.env.CHROMIUM || "/usr/bin/chromium";
const WAIT = Number(process.env.STEP_TIMEOUT_MS || 20000);
const OVERALL = 180000;

const guard = setTimeout(() => {
  console.error(`dashboard.test: gave up after ${OVERALL / 1000} s`);
  process.exit(1);
}, OVERALL);
guard.unref();

const profile = mkdtempSync(join(tmpdir(), "agentd-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath,
  headless: true,
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
  ],
  viewport: { width: 1280, height: 900 },
});
const page = context.pages()[0] || (await context.newPage());
page.setDefaultTimeout(WAIT);

// Problems the page itself reports: uncaught exceptions and Content-Security-Policy violations.
const pageProblems = [];
page.on("pageerror", (error) => pageProblems.push(`uncaught: ${error.message}`));
page.on("console", (message) => {
  if (message.type() === "error" && /Content Security Policy|Refused to/i.test(message.text())) {
    pageProblems.push(`console: ${message.text()}`);
  }
});
// The event-stream requests the page makes, with their headers (to see how they resume).
const streamRequests = [];
page.on("request", async (request) => {
  const url = new URL(request.url());
  if (!url.pathname.endsWith("/events")) return;
  const headers = await request.allHeaders().catch(() => request.headers());
  // EventSource's requests only (the waterfall reads a run's events as JSON pages).
  if (!String(headers.accept || "").includes("text/event-stream")) return;
  streamRequests.push({ at: Date.now(), path: url.pathname, params: url.searchParams, headers });
});

let passed = 0;
let failed = 0;

async function step(name, body) {
  const started = Date.now();
  try {
    await body();
    passed += 1;
    console.log(`ok ${passed} - ${name} (${Date.now() - started} ms)`);
  } catch (error) {
    failed += 1;
    const shot = join(artifacts, "dashboard-failure.png");
    await page.screenshot({ path: shot, fullPage: true }).catch(() => {});
    const notice = await page.locator("[data-testid=notice]").textContent().catch(() => "");
    console.error(`not ok - ${name}: ${error.message.split("\n")[0]}`);
    if (notice) console.error(`  the page's notice: ${notice}`);
    for (const problem of pageProblems) console.error(`  ${problem}`);
    console.error(`  screenshot: ${shot}`);
    throw error;
  }
}

function check(condition, message) {
  if (!condition) throw new Error(message);
}

// The timeline as the page shows it: [{seq, type}].
async function timeline() {
  return page.$$eval("[data-testid=timeline] > li[data-seq]", (items) =>
    items.map((li) => ({ seq: Number(li.getAttribute("data-seq")), type: li.getAttribute("data-type") })));
}

// Exactly seq 1..n, each once, in order; ends with run.completed.
function checkComplete(events, label) {
  const seqs = events.map((e) => e.seq);
  const expected = seqs.map((_, i) => i + 1);
  check(JSON.stringify(seqs) === JSON.stringify(expected), `${label}: seqs are not 1..${seqs.length} once each: ${seqs.join(",")}`);
  check(events[0]?.type === "run.queued", `${label}: the first event is ${events[0]?.type}, not run.queued`);
  check(events.at(-1)?.type === "run.completed", `${label}: the last event is ${events.at(-1)?.type}, not run.completed`);
  for (const type of ["run.started", "task.started", "llm.started", "llm.finished", "agent.final_answer", "task.completed"]) {
    check(events.some((e) => e.type === type), `${label}: no ${type} in ${events.map((e) => e.type).join(",")}`);
  }
}

async function waitForFinalAnswer(runId) {
  await page.waitForFunction(
    (text) => [...document.querySelectorAll("[data-testid=timeline] [data-testid=final-answer]")]
      .some((node) => node.textContent.includes(text)),
    reply,
    { timeout: WAIT * 2 },
  ).catch(() => { throw new Error(`the final answer "${reply}" of run ${runId} did not appear in the timeline`); });
}

async function waitForRowStatus(runId, status) {
  const row = page.locator(`[data-testid=run-row][data-run-id="${runId}"][data-status="${status}"]`);
  await row.waitFor({ timeout: WAIT * 2 }).catch(() => { throw new Error(`the row of run ${runId} did not turn ${status}`); });
  const text = await row.locator("[data-testid=run-status]").textContent();
  check(text.trim() === status, `the row's status reads "${text}", not "${status}"`);
}

async function kickoff() {
  const before = page.url();
  await page.getByTestId("kickoff-submit").click();
  await page.waitForFunction((url) => location.href !== url && /#run=[0-9a-f-]{36}$/.test(location.hash), before)
    .catch(async () => {
      const error = await page.getByTestId("kickoff-error").textContent().catch(() => "");
      throw new Error(`the kickoff did not open a run${error ? `: ${error}` : ""}`);
    });
  return new URL(page.url()).hash.slice("#run=".length);
}

let runId = "";
let first = [];
let waterfallRun = "";

// A webhook receiver that takes everything (the signatures are the e2e tests' business), and an
// endpoint pointing at it, registered before the first run.
const received = [];
const receiver = createServer((request, response) => {
  let body = "";
  request.on("data", (chunk) => (body += chunk)).on("end", () => {
    received.push({ id: request.headers["webhook-id"], body });
    response.writeHead(204).end();
  });
});
await new Promise((resolve) => receiver.listen(0, "127.0.0.1", resolve));
receiver.unref();
const hookResponse = await fetch(`${base}/v1/webhooks`, {
  method: "POST",
  headers: { Authorization: `Bearer ${apiKey}`, "Content-Type": "application/json" },
  body: JSON.stringify({ url: `http://127.0.0.1:${receiver.address().port}/hook`, events: ["run.*"] }),
});
if (hookResponse.status !== 201) {
  console.error(`dashboard.test: registering a webhook answered ${hookResponse.status}`);
  process.exit(1);
}

try {
  await step("the page loads without a key and asks for one", async () => {
    const response = await page.goto(`${base}/`);
    check(response.status() === 200, `GET / answered ${response.status()}`);
    await page.getByTestId("notice").filter({ hasText: "API key" }).waitFor();
    check(await page.getByTestId("api-key").isVisible(), "no API key field");
  });

  await step("the key is accepted and the firehose goes live", async () => {
    await page.getByTestId("api-key").fill(apiKey);
    await page.getByTestId("api-key-save").click();
    await page.getByTestId("connection").filter({ hasText: /^live$/ }).waitFor();
    check(await page.getByTestId("notice").isHidden(), "the key notice is still shown");
  });

  await step("an invalid kickoff shows the problem readably", async () => {
    const example = await page.getByTestId("kickoff-body").inputValue();
    const body = JSON.parse(example);
    check(body.crew && body.inputs, "the prefilled body has no crew or inputs");
    body.crew.tasks[0].agent = "ghost";
    await page.getByTestId("kickoff-body").fill(JSON.stringify(body, null, 2));
    await page.getByTestId("kickoff-submit").click();
    const error = page.getByTestId("kickoff-error");
    await error.filter({ hasText: "422" }).waitFor();
    const text = await error.textContent();
    check(text.includes("crew.tasks[0].agent") && text.includes("ghost"), `the problem lacks the field: ${text}`);
    await page.getByRole("button", { name: "Reset example" }).click();
    check((await page.getByTestId("kickoff-body").inputValue()) === example, "Reset example did not restore the body");
  });

  await step("the prefilled kickoff opens the new run's timeline", async () => {
    runId = await kickoff();
    await page.locator(`[data-testid=run-row][data-run-id="${runId}"]`).waitFor();
    check(await page.getByTestId("kickoff-error").isHidden(), "the kickoff shows an error");
  });

  await step("the fake LLM's final answer appears in the timeline", () => waitForFinalAnswer(runId));

  await step("the run's row turns completed", () => waitForRowStatus(runId, "completed"));

  await step("the run is marked as answered by a fake model", async () => {
    await page.locator(`[data-testid=run-row][data-run-id="${runId}"] [data-testid=fake-llm]`).waitFor();
    const badge = await page.locator("[data-testid=run-summary] [data-testid=fake-llm]").textContent();
    check(badge === "fake model", `the summary's badge says ${badge}`);
  });

  await step("the run's spend is shown per task, agent and model, with its cost", async () => {
    const line = page.locator("[data-testid=run-summary] [data-testid=usage-line]").first();
    await line.waitFor();
    const text = await line.innerText();
    check(/openai\/gpt-4o-mini/.test(text) && /\$\d/.test(text), `the spend line says ${text}`);
  });

  await step("the timeline holds every event once, in order", async () => {
    await page.locator('[data-testid=timeline] > li[data-type="run.completed"]').waitFor();
    first = await timeline();
    checkComplete(first, "live");
    await page.locator('[data-testid=run-summary] [data-testid=run-detail-status]', { hasText: "completed" }).waitFor();
    const shown = await page.locator("main").innerText();
    check(!/\[object |\bnull\b|undefined/.test(shown), `the page shows a rendering slip: ${shown.slice(0, 400)}`);
  });

  await step("the webhooks panel shows the endpoint's deliveries of the run", async () => {
    await page.locator("[data-testid=webhooks-panel] > summary").click();
    const endpoint = page.locator("[data-testid=webhook]", { hasText: "/hook" });
    await endpoint.waitFor();
    await endpoint.getByTestId("webhook-deliveries").click();
    await page.locator('[data-testid=delivery][data-status="delivered"]', { hasText: "run.completed" })
      .waitFor({ timeout: WAIT * 2 });
    const rows = await page.locator("[data-testid=delivery]").count();
    check(rows >= 3, `only ${rows} deliveries are shown (run.queued, run.started, run.completed)`);
    check(received.some((r) => r.body.includes('"run.completed"')), "the receiver got no run.completed");
  });

  await step("a reload shows the same timeline without duplicates", async () => {
    await page.reload();
    await page.locator('[data-testid=timeline] > li[data-type="run.completed"]').waitFor();
    await page.waitForTimeout(500); // anything extra (a duplicate) would have arrived by now
    const again = await timeline();
    checkComplete(again, "after reload");
    check(JSON.stringify(again) === JSON.stringify(first), "the reloaded timeline differs from the live one");
    check((await page.getByTestId("api-key").inputValue()) === apiKey, "the key was not kept");
    await page.getByTestId("connection").filter({ hasText: /^live$/ }).waitFor();
    await waitForRowStatus(runId, "completed");
  });

  await step("a streamed answer is shown as it is typed, then as the final answer", async () => {
    const full = "one two three four five six seven eight nine ten";
    const body = JSON.parse(await page.getByTestId("kickoff-body").inputValue());
    body.stream = true;
    body.crew.tasks[0].description = "STREAM-DEMO: count to ten.";
    await page.getByTestId("kickoff-body").fill(JSON.stringify(body, null, 2));
    const streamed = await kickoff();
    const typing = page.getByTestId("typing-text");
    await page.waitForFunction(() => {
      const node = document.querySelector("[data-testid=typing-text]");
      return node && node.textContent.split(" ").length >= 3;
    }, null, { timeout: WAIT });
    const partial = await typing.textContent();
    check(full.startsWith(partial) && partial.length < full.length, `the typed text is not a part of the answer: "${partial}"`);
    await page.waitForFunction(
      (text) => [...document.querySelectorAll("[data-testid=timeline] [data-testid=final-answer]")]
        .some((node) => node.textContent.includes(text)),
      full, { timeout: WAIT * 2 },
    );
    check(await page.getByTestId("typing").count() === 0, "the typing block stayed after the reply was journaled");
    await waitForRowStatus(streamed, "completed");
    await page.getByRole("button", { name: "Reset example" }).click();
  });

  // A kickoff of the example crew whose calculator calls need approval.
  async function kickoffGated() {
    const body = JSON.parse(await page.getByTestId("kickoff-body").inputValue());
    body.crew.name = "approval-demo";
    body.crew.requires_approval = ["calculator"];
    body.crew.tasks[0].description = "APPROVAL-DEMO: compute for {topic}";
    await page.getByTestId("kickoff-body").fill(JSON.stringify(body, null, 2));
    const id = await kickoff();
    const approval = page.getByTestId("approval");
    await approval.waitFor({ timeout: WAIT * 2 }).catch(() => { throw new Error(`run ${id} showed no pending approval`); });
    const args = await approval.getByTestId("approval-arguments").textContent();
    check(args.includes("6*7"), `the pending call's arguments read "${args}"`);
    await page.locator(`[data-testid=run-row][data-run-id="${id}"][data-status="awaiting_input"]`)
      .waitFor({ timeout: WAIT }).catch(() => { throw new Error(`the row of run ${id} did not turn awaiting_input`); });
    return { id, approval };
  }

  async function waitForText(testid, text, what) {
    await page.waitForFunction(
      ([id, t]) => [...document.querySelectorAll(`[data-testid=timeline] [data-testid=${id}]`)].some((n) => n.textContent.includes(t)),
      [testid, text], { timeout: WAIT * 2 },
    ).catch(() => { throw new Error(`${what} did not appear in the timeline`); });
  }

  await step("a call that needs approval waits with its arguments, and Approve runs it", async () => {
    const { id, approval } = await kickoffGated();
    await approval.getByTestId("approval-approve").click();
    await waitForText("final-answer", "Approved: 42", "the answer after the approved call");
    await waitForRowStatus(id, "completed");
    const types = (await timeline()).map((e) => e.type);
    for (const type of ["tool.approval_requested", "tool.approved", "tool.finished", "run.completed"]) {
      check(types.includes(type), `no ${type} in ${types.join(",")}`);
    }
    check(await page.getByTestId("approval").count() === 0, "the approval is still shown");
  });

  await step("a two-task run's waterfall shows its tasks, model calls, tool call and throttled call", async () => {
    await page.getByRole("button", { name: "Reset example" }).click();
    const body = JSON.parse(await page.getByTestId("kickoff-body").inputValue());
    body.crew.name = "waterfall-demo";
    // 40 calls a minute: every call after the first waits its turn (run.throttled).
    body.crew.max_rpm = 40;
    body.crew.tasks = [
      { ...body.crew.tasks[0], description: "WATERFALL-DEMO: compute for {topic}" },
      { name: "summary", description: "Summarise the facts in one line.", expected_output: "One line",
        agent: body.crew.tasks[0].agent },
    ];
    await page.getByTestId("kickoff-body").fill(JSON.stringify(body, null, 2));
    const id = await kickoff();
    await waitForRowStatus(id, "completed");
    await page.getByTestId("waterfall").getByTestId("waterfall-row").first().waitFor({ timeout: WAIT })
      .catch(() => { throw new Error(`run ${id} showed no waterfall`); });
    const rows = await page.getByTestId("waterfall-row").evaluateAll((nodes) => nodes.map((n) => {
      const bar = n.querySelector("[data-testid=waterfall-bar]").getBoundingClientRect();
      const track = n.querySelector(".wf-track").getBoundingClientRect();
      return { kind: n.dataset.kind, text: n.textContent, left: bar.left - track.left, width: bar.width, track: track.width };
    }));
    const of = (kind) => rows.filter((r) => r.kind === kind);
    check(of("attempt").length === 1, `one attempt: ${JSON.stringify(rows)}`);
    check(of("task").length === 2, `two tasks: ${JSON.stringify(rows)}`);
    check(of("llm").length === 3, `three model calls: ${JSON.stringify(rows)}`);
    check(of("tool").length === 1 && of("tool")[0].text.includes("calculator"), `the calculator call: ${JSON.stringify(rows)}`);
    check(of("wait").length >= 1 && of("wait")[0].text.includes("throttled"), `a throttled wait: ${JSON.stringify(rows)}`);
    check(of("llm").every((r) => /\d+ \+ \d+ tokens/.test(r.text) && r.text.includes("$")), `tokens and cost on the model calls: ${JSON.stringify(of("llm"))}`);
    check(rows.every((r) => r.width > 0 && r.left >= -1 && r.left + r.width <= r.track + 1), `every bar within its track: ${JSON.stringify(rows)}`);
    // On the time axis: the second task starts after the first, the tool call after the first
    // model call, and the throttled wait ends before a later call starts.
    const [research, write] = of("task");
    check(write.left >= research.left + research.width - 2, `the tasks overlap: ${JSON.stringify([research, write])}`);
    const [firstCall] = of("llm");
    check(of("tool")[0].left >= firstCall.left + firstCall.width - 2, "the tool call starts after the model asked for it");
    await page.getByRole("button", { name: "Reset example" }).click();
    waterfallRun = id;
  });

  await step("Fork from here on the second task opens a fork that says where it came from", async () => {
    const before = page.url();
    await page.locator("[data-testid=fork-task][data-task=summary]").click();
    await page.waitForFunction((url) => location.href !== url && /#run=[0-9a-f-]{36}$/.test(location.hash), before)
      .catch(() => { throw new Error("Fork from here did not open a run"); });
    const fork = new URL(page.url()).hash.slice("#run=".length);
    check(fork !== waterfallRun, "the fork is a new run");
    const from = await page.getByTestId("forked-from").textContent({ timeout: WAIT });
    check(from.includes(waterfallRun) && from.includes("summary"), `the fork says it came from ${from}`);
    await waitForRowStatus(fork, "completed");
    const types = (await timeline()).map((e) => e.type);
    check(types[1] === "run.forked", `the fork's second event is ${types[1]}: ${types.join(",")}`);
    const started = types.filter((t) => t === "run.started").length;
    check(started === 1, `one attempt for the fork: ${types.join(",")}`);
  });

  await step("Retry on a failed run queues it again and it goes on from its journal", async () => {
    await page.getByRole("button", { name: "Reset example" }).click();
    const body = JSON.parse(await page.getByTestId("kickoff-body").inputValue());
    // One token: the first model call spends it, and the run fails on its budget.
    body.max_tokens = 1;
    await page.getByTestId("kickoff-body").fill(JSON.stringify(body, null, 2));
    const id = await kickoff();
    await waitForRowStatus(id, "failed");
    await page.getByTestId("run-retry").click();
    await page.waitForFunction(() => [...document.querySelectorAll("[data-testid=timeline] > li[data-type]")]
      .some((li) => li.getAttribute("data-type") === "run.retried"), null, { timeout: WAIT * 2 })
      .catch(() => { throw new Error("no run.retried in the timeline after Retry"); });
    // Still over its budget: it fails again, after a second attempt.
    await waitForRowStatus(id, "failed");
    const types = (await timeline()).map((e) => e.type);
    check(types.filter((t) => t === "run.started").length === 2, `two attempts: ${types.join(",")}`);
    await page.getByRole("button", { name: "Reset example" }).click();
  });

  await step("Reject with a reason tells the model, and the run goes on", async () => {
    const { id, approval } = await kickoffGated();
    await approval.getByTestId("approval-reason").fill("not during the freeze");
    await approval.getByTestId("approval-reject").click();
    await waitForText("tool-rejected", "not during the freeze", "the rejection");
    await waitForText("final-answer", "Rejected as asked.", "the answer after the rejection");
    await waitForRowStatus(id, "completed");
    await page.getByRole("button", { name: "Reset example" }).click();
  });

  await step("a read key watches runs but is offered no Approve, Reject or Kick off", async () => {
    const made = await fetch(`${base}/v1/keys`, {
      method: "POST",
      headers: { Authorization: `Bearer ${apiKey}`, "Content-Type": "application/json" },
      body: JSON.stringify({ tenant: "default", name: "dashboard reader", scopes: ["read"] }),
    });
    check(made.status === 201, `creating a read key answered ${made.status}`);
    const reader = (await made.json()).key;
    const useKey = async (key, shown) => {
      await page.getByTestId("api-key").fill(key);
      await page.getByTestId("api-key-save").click();
      await page.getByTestId("caller").filter({ hasText: shown }).waitFor()
        .catch(() => { throw new Error(`the page did not say the key is ${shown}`); });
    };
    const { id } = await kickoffGated();
    await useKey(reader, /^default · read$/);
    const waiting = page.getByTestId("approval-readonly");
    await waiting.waitFor({ timeout: WAIT * 2 }).catch(() => { throw new Error("a read key does not see the waiting call"); });
    check((await waiting.getByTestId("approval-arguments").textContent()).includes("6*7"), "the waiting call's arguments are not shown");
    check(await page.getByTestId("approval-approve").count() === 0, "a read key is offered Approve");
    check(await page.getByTestId("approval-reject").count() === 0, "a read key is offered Reject");
    check(await page.getByTestId("kickoff-submit").isDisabled(), "a read key is offered Kick off");
    check(await page.getByTestId("run-cancel").count() === 0, "a read key is offered Cancel");
    // The operator's key decides it.
    await useKey(apiKey, /admin/);
    const approval = page.getByTestId("approval");
    await approval.waitFor({ timeout: WAIT * 2 }).catch(() => { throw new Error("the operator's key is not offered the decision"); });
    await approval.getByTestId("approval-approve").click();
    await waitForRowStatus(id, "completed");
    await page.getByRole("button", { name: "Reset example" }).click();
  });

  await step("two versions' evaluations are compared side by side, case by case", async () => {
    const call = async (method, path, body, status) => {
      const response = await fetch(`${base}${path}`, {
        method, headers: { Authorization: `Bearer ${apiKey}`, "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
      check(response.status === status, `${method} ${path} answered ${response.status}: ${await response.clone().text()}`);
      return response.json();
    };
    await page.getByRole("button", { name: "Reset example" }).click();
    const example = JSON.parse(await page.getByTestId("kickoff-body").inputValue()).crew;
    const crew = (version) => ({ ...example, name: "eval-demo",
      tasks: [{ ...example.tasks[0], description: `EVAL-DEMO v${version}: {topic}` }] });
    await call("PUT", "/v1/crews/eval-demo", crew(1), 201);
    await call("PUT", "/v1/crews/eval-demo", crew(2), 200);
    const rubric = { rubric: "Answers the question." };
    const dataset = await call("POST", "/v1/datasets", { name: "browser cases",
      cases: [{ inputs: { topic: "tides" }, expect: rubric }, { inputs: { topic: "harbours" }, expect: rubric }] }, 201);
    const ids = [];
    for (const version of [1, 2]) {
      const started = await call("POST", "/v1/evaluations", { crew: `eval-demo@${version}`, dataset: dataset.id, mode: "live" }, 202);
      ids.push(started.id);
    }
    await page.locator("[data-testid=evaluations-panel] > summary").click();
    await page.locator(`[data-testid=evaluation][data-evaluation-id="${ids[1]}"]`).waitFor();
    check(await page.getByTestId("evaluations-compare").isDisabled(), "Compare is offered before two are chosen");
    await page.locator(`[data-testid=evaluation][data-evaluation-id="${ids[0]}"] [data-testid=pick-a]`).check();
    await page.locator(`[data-testid=evaluation][data-evaluation-id="${ids[1]}"] [data-testid=pick-b]`).check();
    await page.getByTestId("evaluations-compare").click();
    await page.waitForFunction((wanted) => location.hash === wanted, `#compare=${ids[0]},${ids[1]}`);
    // Read again until both have ended.
    await page.waitForFunction(() => document.querySelectorAll("[data-testid=comparison-case] [data-testid=verdict][data-passed]").length === 4,
      null, { timeout: WAIT * 3 }).catch(() => { throw new Error("the comparison never showed four verdicts"); });
    const rows = await page.getByTestId("comparison-case").evaluateAll((nodes) => nodes.map((n) => ({
      inputs: n.querySelector("[data-testid=case-inputs]").textContent,
      differs: n.dataset.differs,
      a: { passed: n.querySelector("[data-testid=answer-a] [data-testid=verdict]").dataset.passed,
           output: n.querySelector("[data-testid=answer-a] [data-testid=answer-output]")?.textContent },
      b: { passed: n.querySelector("[data-testid=answer-b] [data-testid=verdict]").dataset.passed,
           output: n.querySelector("[data-testid=answer-b] [data-testid=answer-output]")?.textContent,
           judge: n.querySelector("[data-testid=answer-b] [data-testid=judge]")?.textContent },
    })));
    check(rows.length === 2, `two cases: ${JSON.stringify(rows)}`);
    const [tides, harbours] = [rows.find((r) => r.inputs.includes("tides")), rows.find((r) => r.inputs.includes("harbours"))];
    check(tides && tides.differs === "false" && tides.a.passed === "true" && tides.b.passed === "true"
      && tides.a.output === reply && tides.b.output === reply, `the tides case: ${JSON.stringify(tides)}`);
    check(harbours && harbours.differs === "true" && harbours.a.passed === "true" && harbours.b.passed === "false"
      && harbours.b.output === "I do not know." && harbours.b.judge.includes("does not answer"),
      `the harbours case: ${JSON.stringify(harbours)}`);
    const totals = await page.getByTestId("comparison-totals").innerText();
    check(/2 of 2 ended \(100 %\)/.test(totals) && /1 of 2 ended \(50 %\)/.test(totals), `the totals: ${totals}`);
    // A case's run opens from the comparison, with its judge's verdict in the timeline.
    await page.getByTestId("comparison-case").filter({ hasText: "harbours" }).getByTestId("answer-b").getByRole("link", { name: "run" }).click();
    await page.locator("[data-testid=timeline] [data-testid=judged]").filter({ hasText: "does not answer" }).waitFor({ timeout: WAIT })
      .catch(() => { throw new Error("the case's run shows no judge's verdict"); });
  });

  if (pidFile) {
    await step("the timeline survives a server restart in the middle of a run", async () => {
      const second = await kickoff();
      check(second !== runId, "the second kickoff opened the first run");
      // The LLM call is in flight (the fake waits 1.5 s): restart the server now.
      await page.locator('[data-testid=timeline] > li[data-type="llm.started"]').waitFor();
      const seenBefore = Math.max(...(await timeline()).map((e) => e.seq));
      const pid = Number(readFileSync(pidFile, "utf8").trim());
      const killedAt = Date.now();
      process.kill(pid, "SIGTERM");
      await page.getByTestId("connection").filter({ hasText: /reconnecting|offline/ }).waitFor();
      await waitForFinalAnswer(second);
      await waitForRowStatus(second, "completed");
      await page.locator('[data-testid=timeline] > li[data-type="run.completed"]').waitFor();
      const events = await timeline();
      checkComplete(events, "across the restart");
      check(events.filter((e) => e.type === "run.started").length >= 2,
        `the run was not picked up again after the restart: ${events.map((e) => e.type).join(",")}`);
      const resumes = streamRequests.filter((r) => r.at > killedAt && r.path === `/v1/runs/${second}/events`);
      check(resumes.length > 0, "the timeline's stream was not reopened after the restart");
      const point = (r) => Number(r.headers["last-event-id"] ?? r.params.get("after") ?? 0);
      check(resumes.every((r) => point(r) >= seenBefore),
        `a reconnection did not resume after seq ${seenBefore}: ${resumes.map(point).join(",")}`);
      // The waterfall separates the attempts: the first marked interrupted, the task going on
      // in the second.
      await page.locator("[data-testid=waterfall-row][data-kind=attempt]").nth(1).waitFor({ timeout: WAIT })
        .catch(() => { throw new Error("the waterfall does not show the second attempt"); });
      const attempts = await page.locator("[data-testid=waterfall-row][data-kind=attempt]")
        .evaluateAll((nodes) => nodes.map((n) => n.dataset.interrupted === "true"));
      check(JSON.stringify(attempts) === "[true,false]", `the attempts' interruptions: ${JSON.stringify(attempts)}`);
      const tasks = await page.locator("[data-testid=waterfall-row][data-kind=task]").allTextContents();
      check(tasks.length === 2 && tasks[1].includes("(resumed)"), `the task in each attempt: ${JSON.stringify(tasks)}`);
      const firehose = streamRequests.filter((r) => r.at > killedAt && r.path === "/v1/events");
      check(firehose.some((r) => Number(r.headers["last-event-id"]) > 0),
        "the firehose did not resume with Last-Event-ID after the restart");
      await page.getByTestId("connection").filter({ hasText: /^live$/ }).waitFor();
    });
  }

  await step("no uncaught script errors or CSP violations", async () => {
    check(pageProblems.length === 0, pageProblems.join("; "));
    await page.screenshot({ path: join(artifacts, "dashboard.png"), fullPage: true });
  });
} catch {
  // Reported by step().
} finally {
  await context.close().catch(() => {});
  rmSync(profile, { recursive: true, force: true });
}

console.log(`browser: ${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
