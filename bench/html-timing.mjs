// SPDX-License-Identifier: MIT
//
// Times the HTML report in headless Chromium with the browser's own clock
// (performance.now() in the page): how long until the page is usable, and
// how long a click, a search, a range selection and the other controls
// take until the next frame is drawn.  Run by bench/html.py; prints JSON.
//
//   node bench/html-timing.mjs FILE.html [REPEAT]
//
// playwright-core comes from tests/js (npm ci there); CHROMIUM names the
// browser (default /usr/bin/chromium).
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "..", "tests", "js", "package.json"));
const { chromium } = require("playwright-core");

const [file, repeatArg] = process.argv.slice(2);
const repeat = +(repeatArg || 5);
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
  const t = await page.evaluate(() => window.narwhal.timings);
  out.loads.push({ readyAt: t.readyAt, decoded: t.decoded, firstRender: t.lastRender });
  if (i === 0) {
    out.shape = await page.evaluate(() => {
      const r = window.narwhal.report;
      return { threads: r.prof.threads.length, nodes: r.prof.threads.reduce((a, x) => a + x.n, 0),
        merged: r.merged().n, functions: r.prof.frames.n,
        samples: r.prof.threads.reduce((a, x) => a + (x.trace ? x.trace.n : 0), 0) };
    });
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
  await timeAction(page, "threads", `const b = document.querySelector('#threads-list input[data-thread="3"]'); b.checked = false; b.dispatchEvent(new Event("change", { bubbles: true }));`);
  await timeAction(page, "threads", `const b = document.querySelector('#threads-list input[data-thread="3"]'); b.checked = true; b.dispatchEvent(new Event("change", { bubbles: true }));`);
  await timeAction(page, "invert", `const b = document.getElementById("inverted"); b.checked = true; b.dispatchEvent(new Event("change"));`);
  await timeAction(page, "invert", `const b = document.getElementById("inverted"); b.checked = false; b.dispatchEvent(new Event("change"));`);
  await context.close();
}
await browser.close();
console.log(JSON.stringify(out));
