// SPDX-License-Identifier: MIT
//
// Times the HTML report in headless Chromium with the browser's own clock
// (performance.now() in the page): how long until the page is usable, and
// how long a click, a search, a range selection and the other controls
// take until the next frame is drawn.  Run by bench/html.py; prints JSON.
//
//   node bench/html-timing.mjs FILE.html [REPEAT] [KIND]
//
// KIND "synth" (default): the actions on bench-synth's profile of 64
// threads.  KIND "build": a recorded build of a thousand processes and
// more: also the first paint, and the actions on its processes (open the
// folded ones, filter, choose a process, the folded ones, creation
// order, a process's threads off), each timed as the others.
//
// playwright-core comes from tests/js (npm ci there); CHROMIUM names the
// browser (default /usr/bin/chromium).
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "..", "tests", "js", "package.json"));
const { chromium } = require("playwright-core");

const [file, repeatArg, kindArg] = process.argv.slice(2);
const repeat = +(repeatArg || 5);
const kind = kindArg || "synth";
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"],
});
const out = { file, loads: [], actions: {} };
const url = "file://" + path.resolve(file);

// Does @act in the page, then waits for the frame after it: the time a person sees.
async function timeAction(page, name, act) {
  const ms = await page.evaluate(async (code) => {
    const t0 = performance.now();
    new Function(code)();
    await new Promise((res) => requestAnimationFrame(() => setTimeout(res, 0)));
    return performance.now() - t0;
  }, act);
  const handler = await page.evaluate((n) => window.narwhal.timings[n], name);
  (out.actions[name] ||= []).push({ frame: ms, handler });
}

for (let i = 0; i < repeat; i++) {
  // bypassCSP: the timed actions are compiled in the page, which the report's own policy forbids.
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 }, bypassCSP: true });
  await context.route("**/*", (r) => (r.request().url() === url ? r.continue() : r.abort()));
  const page = await context.newPage();
  await page.goto(url);
  await page.waitForSelector("body[data-ready='1']", { timeout: 120000 });
  // The frame after the page is ready: what a person sees then.
  await page.waitForFunction(() => window.narwhal.timings.shownAt !== undefined, null, { timeout: 120000 });
  const t = await page.evaluate(() => ({ ...window.narwhal.timings,
    paint: (performance.getEntriesByName("first-contentful-paint")[0] || {}).startTime }));
  out.loads.push({ readyAt: t.readyAt, shownAt: t.shownAt, paint: t.paint, decoded: t.decoded, firstRender: t.lastRender,
    flame: t.flame, timeline: t.timeline });
  if (i === 0) {
    out.shape = await page.evaluate(() => {
      const r = window.narwhal.report;
      const g = r.groups();
      return { threads: r.prof.threads.length, nodes: r.prof.threads.reduce((a, x) => a + x.n, 0),
        merged: r.merged().n, functions: r.prof.frames.n,
        samples: r.prof.threads.reduce((a, x) => a + (x.trace ? x.trace.n : 0), 0),
        processes: g.procs.length, folded: g.nfolded, rows: r.rows().length,
        flameRows: r.flameRows };
    });
  }
  if (kind === "build") {
    await buildActions(page, i);
    await context.close();
    continue;
  }
  const click = (frac) => `
    const c = document.getElementById("flame");
    const r = window.narwhal.report;
    const rect = c.getBoundingClientRect();
    // The widest frame a third of the way up: a real zoom.
    const boxes = r.layout.filter((b) => b.node !== 0 && b.w > 5);
    const b = boxes[Math.floor(boxes.length * ${frac})] || boxes[0];
    c.dispatchEvent(new MouseEvent("click", { clientX: rect.left + b.x + 2, clientY: rect.top + b.y + 3, bubbles: true }));`;
  await timeAction(page, "click", click(0.3));
  await timeAction(page, "reset", `document.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", bubbles: true }));`);
  await timeAction(page, "search", `const s = document.getElementById("search"); s.value = "fn01[0-9]"; s.dispatchEvent(new Event("input"));`);
  await timeAction(page, "search", `const s = document.getElementById("search"); s.value = ""; s.dispatchEvent(new Event("input"));`);
  const range = (a, b) => `
    const tl = document.getElementById("timeline");
    const g = window.narwhal.report.tl;
    const rect = tl.getBoundingClientRect();
    const w = g.width - g.labelW - 4;
    tl.dispatchEvent(new MouseEvent("mousedown", { clientX: rect.left + g.labelW + w * ${a}, clientY: rect.top + g.rowH * 1.5, bubbles: true }));
    window.dispatchEvent(new MouseEvent("mouseup", { clientX: rect.left + g.labelW + w * ${b}, clientY: rect.top + g.rowH * 1.5, bubbles: true }));`;
  await timeAction(page, "range", range(0.2 + 0.05 * i, 0.6));
  await timeAction(page, "click", click(0.5));
  await timeAction(page, "range", `document.getElementById("range-clear").click();`);
  await timeAction(page, "tab", `document.querySelector('#tabs button[data-tab="flat"]').click();`);
  await timeAction(page, "tab", `document.querySelector('#tabs button[data-tab="tree"]').click();`);
  await timeAction(page, "metric", `const m = document.getElementById("metric"); m.value = "1"; m.dispatchEvent(new Event("change"));`);
  await timeAction(page, "metric", `const m = document.getElementById("metric"); m.value = "0"; m.dispatchEvent(new Event("change"));`);
  // Thread 3 off and on: its box in the thread list, its process opened first.
  const thread3 = `let b = document.querySelector('#threads-list input[data-thread="3"]');
    if (!b) { document.querySelector('#threads-list button[data-toggle]').click(); b = document.querySelector('#threads-list input[data-thread="3"]'); }`;
  await timeAction(page, "threads", `${thread3} b.checked = false; b.dispatchEvent(new Event("change", { bubbles: true }));`);
  await timeAction(page, "threads", `${thread3} b.checked = true; b.dispatchEvent(new Event("change", { bubbles: true }));`);
  await timeAction(page, "invert", `const b = document.getElementById("inverted"); b.checked = true; b.dispatchEvent(new Event("change"));`);
  await timeAction(page, "invert", `const b = document.getElementById("inverted"); b.checked = false; b.dispatchEvent(new Event("change"));`);
  await context.close();
}
await browser.close();
console.log(JSON.stringify(out));

// The actions on the processes of a recorded build, and the flame graph's.
async function buildActions(page, i) {
  const click = `
    const c = document.getElementById("flame");
    const r = window.narwhal.report;
    const rect = c.getBoundingClientRect();
    const boxes = r.layout.filter((b) => b.node !== 0 && b.w > 5 && b.d > 3);
    const b = boxes[Math.floor(boxes.length * ${0.2 + 0.1 * i})] || boxes[0];
    c.dispatchEvent(new MouseEvent("click", { clientX: rect.left + b.x + 2, clientY: rect.top + b.y + 3, bubbles: true }));`;
  // A click on a row's label in the timeline, scrolled into view before (not timed).
  const row = async (test) => {
    await page.evaluate(async (t) => {
      const r = window.narwhal.report;
      document.getElementById("timeline-scroll").scrollTop = r.tl.rowH * r.rows().findIndex(new Function("return " + t)());
      await new Promise((res) => requestAnimationFrame(() => setTimeout(res, 0)));
    }, test);
    return `
      const r = window.narwhal.report;
      const k = r.rows().findIndex(${test});
      const tl = document.getElementById("timeline");
      const rect = tl.getBoundingClientRect();
      const y = rect.top + r.tl.rowH * (k + 1) - r.tl.scroll + r.tl.rowH / 2;
      tl.dispatchEvent(new MouseEvent("mousedown", { clientX: rect.left + 8, clientY: y, bubbles: true }));`;
  };
  const input = (id, v) => `const e = document.getElementById("${id}"); e.value = ${JSON.stringify(v)}; e.dispatchEvent(new Event("input"));`;
  const select = (v) => `const e = document.getElementById("process"); e.value = ${v}; e.dispatchEvent(new Event("change"));`;
  await timeAction(page, "click", click);
  await timeAction(page, "reset", `document.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", bubbles: true }));`);
  await timeAction(page, "toggle", await row(`(x) => x.kind === "more"`));
  await timeAction(page, "toggle", await row(`(x) => x.kind === "more"`));
  await timeAction(page, "filter", input("tl-filter", "cc1"));
  await timeAction(page, "filter", input("tl-filter", ""));
  await timeAction(page, "process", select(`window.narwhal.report.groups().busy[0].id`));
  await timeAction(page, "process", select(`"more"`));
  await timeAction(page, "process", select(`""`));
  await timeAction(page, "order", `const b = document.getElementById("tl-created"); b.checked = true; b.dispatchEvent(new Event("change"));`);
  await timeAction(page, "order", `const b = document.getElementById("tl-created"); b.checked = false; b.dispatchEvent(new Event("change"));`);
  const box = `document.querySelector('#threads-list input[data-group="more"]')`;
  await timeAction(page, "threads", `const b = ${box}; b.checked = false; b.dispatchEvent(new Event("change", { bubbles: true }));`);
  await timeAction(page, "threads", `const b = ${box}; b.checked = true; b.dispatchEvent(new Event("change", { bubbles: true }));`);
  await timeAction(page, "search", input("search", "^c_parse"));
  await timeAction(page, "search", input("search", ""));
  await timeAction(page, "tab", `document.querySelector('#tabs button[data-tab="threads"]').click();`);
  await timeAction(page, "tab", `document.querySelector('#tabs button[data-tab="tree"]').click();`);
}
