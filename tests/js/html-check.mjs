// SPDX-License-Identifier: MIT
//
// Opens narwhal-report's HTML report in a real browser (Debian's chromium,
// or Debian's firefox-esr over WebDriver BiDi, driven by playwright-core)
// with the network blocked, uses it as a person would, and prints what the
// page showed as one JSON object; tests/integration/export-html.sh compares
// those numbers with narwhal-report's text views.
//
//   node html-check.mjs FILE.html OUTDIR [OPTIONS-JSON]
//
// OPTIONS (all optional):
//   fn       a function to select (from the flat table): its callers,
//            callees and source lines are read
//   search   a regular expression typed into the search box
//   zoom     a function whose flame graph frame is clicked (zoom), then Esc
//   tid      a thread to show alone (the thread selector)
//   metric   a metric to switch to (the metric selector)
//   range    [a, b]: fractions of the timeline dragged across
//   shots    file name prefix of the screenshots in OUTDIR (default "html")
//   full     also check the keyboard, icicle and inverted views, 200 % zoom
//
// BROWSER=firefox uses /usr/bin/firefox-esr (FIREFOX to change it);
// CHROMIUM names chromium (default /usr/bin/chromium).  Every request the
// page makes that is not for the file itself is aborted and counted; the
// output's "requests" lists them (the test wants none).  Exits 1 with the
// reason on stderr when the page fails to load or a step fails.
import { existsSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(import.meta.url);
const pw = require("playwright-core");

const [file, outdir, optsArg] = process.argv.slice(2);
if (!file || !outdir) {
  console.error("usage: node html-check.mjs FILE.html OUTDIR [OPTIONS-JSON]");
  process.exit(2);
}
const opts = optsArg ? JSON.parse(optsArg) : {};
const shots = opts.shots || "html";
mkdirSync(outdir, { recursive: true });

function fail(msg) {
  console.error(`html-check: ${msg}`);
  process.exit(1);
}

const which = process.env.BROWSER || "chromium";
let browser;
if (which === "firefox") {
  const exe = process.env.FIREFOX || "/usr/bin/firefox-esr";
  if (!existsSync(exe)) fail(`${exe} is missing (apt-get install firefox-esr)`);
  // Stock Firefox speaks WebDriver BiDi; the "moz-" channels make playwright use it.
  browser = await pw.firefox.launch({ channel: "moz-firefox", executablePath: exe, headless: true });
} else {
  const exe = process.env.CHROMIUM || "/usr/bin/chromium";
  if (!existsSync(exe)) fail(`${exe} is missing (apt-get install chromium)`);
  browser = await pw.chromium.launch({
    executablePath: exe,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
      "--disable-component-update", "--no-first-run"],
  });
}

const out = { browser: which, requests: [], errors: [] };
const url = "file://" + path.resolve(file);

async function openPage(viewport, scale) {
  const context = await browser.newContext({ viewport, deviceScaleFactor: scale || 1 });
  // The network is blocked: anything but the file itself is aborted and noted.
  await context.route("**/*", (route) => {
    const u = route.request().url();
    if (u === url) return route.continue();
    out.requests.push(u);
    return route.abort();
  });
  const page = await context.newPage();
  page.on("request", (rq) => { if (rq.url() !== url && !out.requests.includes(rq.url())) out.requests.push(rq.url()); });
  page.on("pageerror", (e) => out.errors.push(String(e)));
  page.on("console", (m) => { if (m.type() === "error") out.errors.push(m.text()); });
  await page.goto(url);
  await page.waitForSelector("body[data-ready='1']", { timeout: 30000 });
  return { context, page };
}

// The rows of a table as arrays of cell texts.
async function rows(page, sel) {
  return page.$$eval(`${sel} tbody tr`, (trs) => trs.map((tr) => ({
    frame: tr.dataset.frame, line: tr.dataset.line, path: tr.dataset.path,
    level: tr.getAttribute("aria-level"),
    cells: [...tr.cells].map((c) => c.textContent.trim()),
  })));
}

const num = (s) => parseFloat(String(s).replace("%", ""));

async function tab(page, name) {
  await page.click(`#tabs button[data-tab="${name}"]`);
}

async function flat(page, n = 40) {
  await tab(page, "flat");
  const r = await rows(page, "#flat");
  return r.slice(0, n).map((x) => ({ name: x.cells[2], self: num(x.cells[0]), total: num(x.cells[1]) }));
}

// The flame graph frame of function @name with the widest box, in page coordinates.
async function frameBox(page, name) {
  const b = await page.evaluate((nm) => {
    const r = window.narwhal.report;
    const { tree } = r.view();
    let best = null;
    for (const l of r.layout) {
      if (l.node === 0 || r.prof.frames.name[tree.frame[l.node]] !== nm) continue;
      if (!best || l.w > best.w) best = l;
    }
    return best && { x: best.x, y: best.y, w: best.w, row: r.layoutRow };
  }, name);
  if (!b) return null;
  const c = await page.locator("#flame").boundingBox();
  return { x: c.x + b.x + Math.min(b.w / 2, 20), y: c.y + b.y + b.row / 2, w: b.w, canvasW: c.width };
}

async function main() {
  const { context, page } = await openPage({ width: 1280, height: 900 });
  out.timings = await page.evaluate(() => window.narwhal.timings);
  out.status = await page.textContent("#status");
  out.title = await page.title();
  await page.screenshot({ path: path.join(outdir, `${shots}-flame.png`), fullPage: false });
  out.flat = await flat(page);
  await tab(page, "tree");
  out.tree = (await rows(page, "#tree")).map((x) => ({ name: x.cells[2].replace(/^[▸▾]/, ""), total: num(x.cells[0]), self: num(x.cells[1]), level: +x.level }));
  await page.screenshot({ path: path.join(outdir, `${shots}-tree.png`), fullPage: true });
  out.legend = await page.$$eval("#legend span", (s) => s.map((x) => x.textContent));

  if (opts.fn) {
    await tab(page, "flat");
    await page.fill("#flat-filter", `^${opts.fn}$`);
    const row = page.locator("#flat tbody tr").first();
    if (!(await row.count())) fail(`no flat row for ${opts.fn}`);
    await row.click();
    await page.fill("#flat-filter", "");
    await page.screenshot({ path: path.join(outdir, `${shots}-flat.png`), fullPage: true });
    await tab(page, "sandwich");
    out.sandwich = {
      self: num(await page.textContent("#sandwich-self")),
      total: num(await page.textContent("#sandwich-total")),
      callers: (await rows(page, "#callers")).map((x) => ({ name: x.cells[2], all: num(x.cells[0]), func: num(x.cells[1]) })),
      callees: (await rows(page, "#callees")).map((x) => ({ name: x.cells[2], all: num(x.cells[0]), func: num(x.cells[1]) })),
    };
    await page.screenshot({ path: path.join(outdir, `${shots}-sandwich.png`), fullPage: true });
    await tab(page, "source");
    out.source = (await rows(page, "#source")).filter((x) => x.line !== undefined).map((x) => ({
      line: +x.line, self: x.cells[0] ? num(x.cells[0]) : 0, total: x.cells[1] ? num(x.cells[1]) : 0, text: x.cells[3],
    }));
    out.sourceHead = await page.textContent("#source-head");
    await page.screenshot({ path: path.join(outdir, `${shots}-source.png`), fullPage: true });
  }

  if (opts.search) {
    await page.fill("#search", opts.search);
    out.matched = await page.textContent("#matched");
    out.matchedShare = num(await page.getAttribute("#matched", "data-share"));
    await page.screenshot({ path: path.join(outdir, `${shots}-search.png`) });
    await page.fill("#search", "");
  }

  if (opts.zoom) {
    const b = await frameBox(page, opts.zoom);
    if (!b) fail(`no frame ${opts.zoom} in the flame graph`);
    const before = b.w;
    await page.mouse.click(b.x, b.y);
    const after = await frameBox(page, opts.zoom);
    out.zoom = {
      before, after: after.w, canvas: after.canvasW,
      reset: await page.isEnabled("#reset-zoom"),
      hover: null,
    };
    await page.mouse.move(after.x, after.y);
    out.zoom.hover = await page.textContent("#tooltip");
    await page.screenshot({ path: path.join(outdir, `${shots}-zoomed.png`) });
    await page.keyboard.press("Escape");
    out.zoom.afterEsc = (await frameBox(page, opts.zoom)).w;
    out.zoom.resetAfterEsc = await page.isEnabled("#reset-zoom");
  }

  if (opts.full) {
    // Keyboard: "/" focuses the search box; arrows move in the call tree.
    await page.locator("body").click({ position: { x: 5, y: 5 } });
    await page.keyboard.press("/");
    out.slashFocus = await page.evaluate(() => document.activeElement && document.activeElement.id);
    await page.keyboard.press("Escape");
    await tab(page, "tree");
    await page.focus("#tree");
    const c0 = await page.evaluate(() => window.narwhal.report.state.cursor);
    await page.keyboard.press("ArrowDown");
    await page.keyboard.press("ArrowDown");
    const c1 = await page.evaluate(() => window.narwhal.report.state.cursor);
    await page.keyboard.press("ArrowLeft");
    const c2 = await page.evaluate(() => window.narwhal.report.state.cursor);
    out.keys = { c0, c1, c2 };
    // Inverted: the functions at the base are the leaves, as wide as their self weight.
    await page.check("#inverted");
    out.inverted = await page.evaluate(() => {
      const r = window.narwhal.report;
      const { tree, w } = r.view();
      return r.layout.filter((l) => tree.depth[l.node] === 1)
        .map((l) => ({ name: r.prof.frames.name[tree.frame[l.node]], share: 100 * w.total[l.node] / w.total[0] }))
        .sort((a, b) => b.share - a.share).slice(0, 5);
    });
    await tab(page, "tree");
    out.invertedTree = (await rows(page, "#tree")).map((x) => ({ name: x.cells[2].replace(/^[▸▾]/, ""), total: num(x.cells[0]), self: num(x.cells[1]), level: +x.level }));
    await page.screenshot({ path: path.join(outdir, `${shots}-inverted.png`) });
    await page.uncheck("#inverted");
    await page.check("#icicle");
    out.icicle = await page.evaluate(() => {
      const r = window.narwhal.report;
      const root = r.layout.find((l) => l.node === 0);
      return root ? root.y : -1;
    });
    await page.screenshot({ path: path.join(outdir, `${shots}-icicle.png`) });
    await page.uncheck("#icicle");
    // Legible at 100 %: the tables' text is at least 12 px and nothing overflows sideways.
    out.read100 = await page.evaluate(() => ({
      font: parseFloat(getComputedStyle(document.querySelector("#tree td")).fontSize),
      overflow: document.documentElement.scrollWidth > document.documentElement.clientWidth + 1,
    }));
  }

  if (opts.metric) {
    await page.selectOption("#metric", { label: opts.metric });
    out.metricFlat = await flat(page, 10);
    out.metricTitle = await page.getAttribute("#flat tbody tr td", "title");
    await page.selectOption("#metric", { index: 0 });
  }

  if (opts.range) {
    const c = await page.locator("#timeline").boundingBox();
    const geo = await page.evaluate(() => window.narwhal.report.tl);
    const plotW = geo.width - geo.labelW - 4;
    const y = c.y + geo.rowH * 1.5;
    await page.mouse.move(c.x + geo.labelW + plotW * opts.range[0], y);
    await page.mouse.down();
    await page.mouse.move(c.x + geo.labelW + plotW * opts.range[1], y, { steps: 4 });
    await page.mouse.up();
    out.range = await page.evaluate(() => window.narwhal.report.state.range);
    out.rangeLabel = await page.textContent("#range-label");
    out.rangeFlat = await flat(page, 10);
    await tab(page, "tree");
    await page.screenshot({ path: path.join(outdir, `${shots}-range.png`) });
    await page.click("#range-clear");
  }

  if (opts.tid) {
    await page.click("#threads-summary");
    await page.uncheck("#threads-list input[data-all]");
    await page.check(`#threads-list input[data-thread="${await page.evaluate((tid) => window.narwhal.report.prof.threads.find((t) => t.tid === tid).index, opts.tid)}"]`);
    await page.click("#threads-summary");
    out.threadFlat = await flat(page, 10);
    out.threadSummary = await page.textContent("#threads-summary");
    await tab(page, "threads");
    await page.screenshot({ path: path.join(outdir, `${shots}-threads.png`) });
  }

  if (opts.diff) {
    out.diffLegend = await page.textContent("#diff-legend");
    await tab(page, "flat");
    out.diffFlat = (await rows(page, "#flat")).slice(0, 10).map((x) => ({ name: x.cells[2], base: num(x.cells[5]), now: num(x.cells[6]), change: num(x.cells[7].replace("−", "-")) }));
    await page.screenshot({ path: path.join(outdir, `${shots}-diff.png`) });
  }
  await context.close();

  if (opts.full) {
    // 200 %: half the CSS pixels at twice the device pixels, as the browser's zoom gives.
    const { context: c2, page: p2 } = await openPage({ width: 640, height: 450 }, 2);
    out.read200 = await p2.evaluate(() => ({
      font: parseFloat(getComputedStyle(document.querySelector("#tree td")).fontSize),
      overflow: document.documentElement.scrollWidth > document.documentElement.clientWidth + 1,
    }));
    await p2.screenshot({ path: path.join(outdir, `${shots}-200.png`), fullPage: true });
    await c2.close();
  }
}

try {
  await main();
} catch (e) {
  await browser.close();
  fail(e && e.stack ? e.stack : String(e));
}
await browser.close();
console.log(JSON.stringify(out, null, 1));
