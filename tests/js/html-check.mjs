// SPDX-License-Identifier: MIT
//
// Opens narwhal-report's HTML report in a real browser (Debian's chromium,
// or Debian's firefox-esr over WebDriver BiDi, driven by puppeteer-core)
// with the network blocked, uses it as a person would, and prints what the
// page showed as one JSON object; tests/integration/export-html.sh compares
// those numbers with narwhal-report's text views.
//
// puppeteer-core, not playwright-core: the page's CSP forbids eval, and
// playwright runs every evaluation through eval in the page, which Firefox
// ESR 140 (Debian 12's firefox-esr from bookworm) blocks under that CSP in
// scripts that WebDriver BiDi runs (ESR 153 no longer does).  puppeteer sends
// each function as WebDriver BiDi's functionDeclaration, which no CSP
// governs; so every step here is done with page.evaluate, $eval, $$eval,
// clicks, the mouse and the keyboard, never with puppeteer's locators (they
// poll through eval).
//
//   node html-check.mjs FILE.html OUTDIR [OPTIONS-JSON]
//
// OPTIONS (all optional):
//   fn       a function to select (from the flat table): its callers,
//            callees and source lines are read
//   disasm   {find, line}: with fn, the Disassembly panel: its rows, the
//            hottest instruction's line clicked (the instructions it marks),
//            find typed into its filter (the instructions it marks), then
//            the Source panel's row of line clicked (back in the Disassembly
//            panel, the instructions marked)
//   search   a regular expression typed into the search box
//   zoom     a function whose flame graph frame is clicked (zoom), then Esc
//   tid      a thread to show alone (the thread selector)
//   metric   a metric to switch to (the metric selector)
//   range    [a, b]: fractions of the timeline dragged across
//   shots    file name prefix of the screenshots in OUTDIR (default "html")
//   full     also check the keyboard, icicle and inverted views, 200 % zoom
//   lean     only what the other options ask (not the flat table and the
//            call tree every run reads), in a 1400x1000 window
//   screen   also open the page in a 1400x1000 window and read its first
//            screen: how much of the flame graph's box in it is drawn
//            (the canvas's pixels), where the root is, how deep the graph
//            is and how deep the frames a pixel wide go
//   groups   {filter, listFilter}: the timeline's and the selectors'
//            processes: the rows as the page has them, then, by clicks
//            and typing, the folded processes opened and closed, a process
//            closed and opened, creation order, the timeline's filter
//            (filter) and its "Only these", the Process selector's
//            options and its folded choice, the thread list's filter
//            (listFilter) and its "only the matching" box
//
// BROWSER=firefox uses /usr/bin/firefox-esr (FIREFOX to change it);
// CHROMIUM names chromium (default /usr/bin/chromium).  Every request the
// page makes that is not for the file itself is aborted and counted; the
// output's "requests" lists them (the test wants none); data: URLs carry
// their bytes in the URL and are let through.  Exits 1 with the
// reason on stderr when the page fails to load or a step fails.
import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import puppeteer from "puppeteer-core";

const [file, outdir, optsArg] = process.argv.slice(2);
if (!file || !outdir) {
  console.error("usage: node html-check.mjs FILE.html OUTDIR [OPTIONS-JSON]");
  process.exit(2);
}
const opts = optsArg ? JSON.parse(optsArg) : {};
const shots = opts.shots || "html";
mkdirSync(outdir, { recursive: true });

let browser;
// A step that failed: once the browser runs, thrown to the end of main(),
// which closes the browser (and so removes its profile) before exiting.
class Failed extends Error {}
function fail(msg) {
  if (browser) throw new Failed(msg);
  console.error(`html-check: ${msg}`);
  process.exit(1);
}

const which = process.env.BROWSER || "chromium";
if (which === "firefox") {
  const exe = process.env.FIREFOX || "/usr/bin/firefox-esr";
  if (!existsSync(exe)) fail(`${exe} is missing (apt-get install firefox-esr)`);
  // Stock Firefox, over WebDriver BiDi.
  browser = await puppeteer.launch({ browser: "firefox", executablePath: exe, headless: true, defaultViewport: null });
} else {
  const exe = process.env.CHROMIUM || "/usr/bin/chromium";
  if (!existsSync(exe)) fail(`${exe} is missing (apt-get install chromium)`);
  browser = await puppeteer.launch({
    browser: "chrome",
    executablePath: exe,
    headless: true,
    defaultViewport: null,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
      "--disable-component-update", "--no-first-run"],
  });
}

const out = { browser: which, version: await browser.version(), requests: [], errors: [] };
const url = "file://" + path.resolve(file);

async function openPage(viewport, scale) {
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  await page.setViewport({ ...viewport, deviceScaleFactor: scale || 1 });
  // The network is blocked: anything but the file itself is aborted and noted.
  await page.setRequestInterception(true);
  page.on("request", (rq) => {
    const u = rq.url();
    if (u === url || u.startsWith("data:")) return rq.continue();
    if (!out.requests.includes(u)) out.requests.push(u);
    return rq.abort();
  });
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

// Clicks the element @sel once it is visible (in its middle, scrolled into view).
// A table the page redraws between the wait and the click detaches the row
// found: the click is tried again on the new one, as a person's would land.
async function click(page, sel) {
  for (let attempt = 0; ; attempt++) {
    await page.waitForSelector(sel, { visible: true, timeout: 10000 });
    try {
      await page.click(sel);
      return;
    } catch (e) {
      if (attempt >= 4 || !/detached/i.test(String(e && e.message))) throw e;
    }
  }
}

// What a person does to replace the text of an input: select it all, type
// over it (or delete it).
async function fill(page, sel, text) {
  await click(page, sel);
  await page.$eval(sel, (e) => e.select());
  if (text) await page.keyboard.type(text);
  else await page.keyboard.press("Backspace");
}

// The flame graph in the first screen: the part of its box inside the
// window (the box scrolls within itself), the share of that part's pixels
// that are drawn, the root's place, the graph's rows and the deepest
// frame drawn and the deepest at least a pixel wide.
function readScreen(page) {
  return page.evaluate(() => {
    const r = window.narwhal.report;
    const c = document.getElementById("flame");
    const wrap = c.parentElement;
    const cr = c.getBoundingClientRect();
    const wr = wrap.getBoundingClientRect();
    const wtop = wr.top + wrap.clientTop;
    const top = Math.max(0, cr.top, wtop);
    const bottom = Math.min(window.innerHeight, cr.bottom, wtop + wrap.clientHeight);
    const left = Math.max(0, cr.left);
    const right = Math.min(window.innerWidth, cr.right, wr.left + wrap.clientLeft + wrap.clientWidth);
    const k = c.width / cr.width;
    let drawn = 0;
    let all = 0;
    if (bottom > top && right > left) {
      const img = c.getContext("2d").getImageData(Math.round((left - cr.left) * k), Math.round((top - cr.top) * k),
        Math.round((right - left) * k), Math.round((bottom - top) * k));
      for (let i = 3; i < img.data.length; i += 4) if (img.data[i]) drawn++;
      all = img.data.length / 4;
    }
    const root = r.layout.find((l) => l.node === 0);
    let deepest = 0;
    let deepWide = 0;
    for (const l of r.layout) {
      deepest = Math.max(deepest, l.d);
      if (l.w >= 1) deepWide = Math.max(deepWide, l.d);
    }
    return {
      window: [window.innerWidth, window.innerHeight], visible: [left, top, right, bottom],
      share: all ? drawn / all : 0, rootTop: root ? cr.top + root.y : null, rowH: r.layoutRow,
      rows: r.flameRows, canvasHeight: cr.height, deepest, deepWide, maxDepth: r.view().tree.maxDepth,
    };
  });
}

// The rows of the timeline as the page has them (Report.rows()).
function readRows(page) {
  return page.evaluate(() => {
    const r = window.narwhal.report;
    const g = r.groups();
    return r.rows().map((x) => ({
      kind: x.kind, depth: x.depth, open: !!x.open, threads: x.threads.length,
      pid: x.p ? x.p.pid : 0, comm: x.p ? x.p.comm : "", procs: x.procs ? x.procs.length : 0,
      name: x.kind === "thread" ? r.prof.threads[x.ti].comm : "",
      weight: x.threads.reduce((a, ti) => a + g.weight[ti], 0),
    }));
  });
}

// Clicks the label of timeline row @i, scrolled into the box first, as a person would.
async function clickRow(page, i) {
  await page.evaluate((k) => {
    const r = window.narwhal.report;
    const scroller = document.getElementById("timeline-scroll");
    const y = r.tl.rowH * (k + 1);
    if (y < scroller.scrollTop + r.tl.rowH || y + r.tl.rowH > scroller.scrollTop + scroller.clientHeight) scroller.scrollTop = y - r.tl.rowH;
  }, i);
  await settled(page);
  const c = await box(page, "#timeline");
  const geo = await page.evaluate(() => window.narwhal.report.tl);
  await page.mouse.click(c.x + 8, c.y + geo.rowH * (i + 1) - geo.scroll + geo.rowH / 2);
  await settled(page);
}

const textOf = (page, sel) => page.$eval(sel, (e) => e.textContent);
const attrOf = (page, sel, name) => page.$eval(sel, (e, n) => e.getAttribute(n), name);
const isEnabled = (page, sel) => page.$eval(sel, (e) => !e.disabled && e.getAttribute("aria-disabled") !== "true");

async function box(page, sel) {
  const h = await page.$(sel);
  if (!h) fail(`no ${sel} in the page`);
  return h.boundingBox();
}

// Ticks (@on) or clears the checkbox @sel by clicking it, if it is not so already.
async function setChecked(page, sel, on) {
  if ((await page.$eval(sel, (e) => e.checked)) !== on) await click(page, sel);
  if ((await page.$eval(sel, (e) => e.checked)) !== on) fail(`clicking ${sel} did not ${on ? "tick" : "clear"} it`);
}

// Picks the option of the select @sel with the label @pick.label or at @pick.index.
async function selectOption(page, sel, pick) {
  const value = await page.$eval(sel, (e, p) => {
    const o = [...e.options].find((x, i) => (p.label !== undefined ? x.label === p.label : i === p.index));
    return o ? o.value : null;
  }, pick);
  if (value === null) fail(`no option ${JSON.stringify(pick)} in ${sel}`);
  await page.select(sel, value);
}

async function tab(page, name) {
  await click(page, `#tabs button[data-tab="${name}"]`);
}

async function flat(page, n = 40) {
  await tab(page, "flat");
  const r = await rows(page, "#flat");
  return r.slice(0, n).map((x) => ({ name: x.cells[2], self: num(x.cells[0]), total: num(x.cells[1]) }));
}

// Two animation frames: what the last action changed is laid out and drawn,
// and the page has answered it (a scroll bar that came or went resizes the
// flame graph, which the page draws again from its ResizeObserver).
function settled(page) {
  return page.evaluate(() => new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(ok))));
}

// The flame graph frame of function @name with the widest box, in page coordinates.
async function frameBox(page, name) {
  await settled(page);
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
  const c = await box(page, "#flame");
  return { x: c.x + b.x + Math.min(b.w / 2, 20), y: c.y + b.y + b.row / 2, w: b.w, canvasW: c.width };
}

// The processes of a many-process recording (the option groups).
async function groups(page) {
  const g = opts.groups;
  const rowsAt = () => readRows(page);
  const o = {};
  o.initial = await rowsAt();
  o.count = await textOf(page, "#tl-count");
  await page.screenshot({ path: path.join(outdir, `${shots}-groups.png`) });
  // The folded processes: opened, then closed, by their row's label.
  const more = o.initial.findIndex((x) => x.kind === "more");
  if (more < 0) fail("no row of folded processes");
  await clickRow(page, more);
  o.moreOpen = await rowsAt();
  await page.screenshot({ path: path.join(outdir, `${shots}-more.png`) });
  await clickRow(page, more);
  o.moreClosed = await rowsAt();
  // A process of several threads: closed or opened, then back.
  const proc = o.initial.findIndex((x) => x.kind === "proc");
  if (proc < 0) fail("no process row of several threads");
  await clickRow(page, proc);
  o.procToggled = await rowsAt();
  await clickRow(page, proc);
  o.procBack = await rowsAt();
  // Creation order, one click away, and back.
  await setChecked(page, "#tl-created", true);
  o.created = await rowsAt();
  await page.screenshot({ path: path.join(outdir, `${shots}-created.png`) });
  await setChecked(page, "#tl-created", false);
  // The filter, and the views of what it matches alone.
  await fill(page, "#tl-filter", g.filter);
  await settled(page);
  o.filtered = await rowsAt();
  o.filteredCount = await textOf(page, "#tl-count");
  await click(page, "#tl-only");
  o.onlySummary = await textOf(page, "#threads-summary");
  o.onlyFlat = await flat(page, 5);
  await page.screenshot({ path: path.join(outdir, `${shots}-filter.png`) });
  await fill(page, "#tl-filter", "");
  // The Process selector: the same processes, the folded ones as one choice.
  await selectOption(page, "#process", { index: 0 });
  o.processOptions = await page.$$eval("#process option", (os) => os.map((x) => ({ value: x.value, label: x.label })));
  const moreOpt = o.processOptions.find((x) => x.value === "more");
  if (!moreOpt) fail("no choice of the folded processes in the Process selector");
  await selectOption(page, "#process", { label: moreOpt.label });
  o.moreSummary = await textOf(page, "#threads-summary");
  await selectOption(page, "#process", { index: 0 });
  // The thread list: the same rows; its filter is the timeline's.
  await click(page, "#threads-summary");
  o.listRows = await page.$$eval("#threads-list input", (bs) => bs.map((b) => b.dataset.all ? "all" : b.dataset.group !== undefined ? "group:" + b.dataset.group : "thread"));
  await fill(page, "#threads-filter", g.listFilter);
  o.listFiltered = await page.$$eval("#threads-list input[data-thread]", (bs) => bs.length);
  o.listAllLabel = await textOf(page, "#threads-list label");
  o.timelineFilter = await page.$eval("#tl-filter", (e) => e.value);
  await page.screenshot({ path: path.join(outdir, `${shots}-list.png`) });
  await setChecked(page, "#threads-list input[data-all]", true);
  o.listSummary = await textOf(page, "#threads-summary");
  await fill(page, "#threads-filter", "");
  await click(page, "#threads-summary");
  o.timings = await page.evaluate(() => window.narwhal.timings);
  out.groups = o;
}

// The Disassembly panel of the function selected (opts.disasm).
async function disasm(page) {
  const o = {};
  const read = () => page.$$eval("#disasm tbody tr[data-addr]", (trs) => trs.map((tr) => ({
    addr: tr.dataset.addr, key: tr.dataset.key || "", hl: tr.classList.contains("hl"),
    match: tr.classList.contains("match"), cells: [...tr.cells].map((c) => c.textContent.trim()),
  })));
  await tab(page, "disasm");
  o.head = await textOf(page, "#disasm-head");
  o.rows = (await read()).map((x) => ({ addr: x.addr, self: x.cells[0] ? num(x.cells[0]) : 0, total: x.cells[1] ? num(x.cells[1]) : 0, text: x.cells[3] || "", line: x.key }));
  if (!o.rows.length) fail("no instruction in the Disassembly panel");
  const hot = o.rows.reduce((a, b) => (b.self > a.self ? b : a));
  o.hot = hot.addr;
  await click(page, `#disasm tbody tr[data-addr="${hot.addr}"] td.loc`);
  o.marked = (await read()).filter((x) => x.hl).map((x) => ({ addr: x.addr, line: x.key }));
  await page.screenshot({ path: path.join(outdir, `${shots}-disasm.png`), fullPage: true });
  await fill(page, "#disasm-filter", opts.disasm.find);
  o.count = await textOf(page, "#disasm-count");
  o.matched = (await read()).filter((x) => x.match).map((x) => x.cells[3]);
  await fill(page, "#disasm-filter", "");
  await tab(page, "source");
  await click(page, `#source tbody tr[data-line="${opts.disasm.line}"]`);
  o.fromSource = {
    tab: await page.evaluate(() => window.narwhal.report.state.tab),
    marked: (await read()).filter((x) => x.hl).map((x) => x.key),
  };
  out.disasm = o;
}

// The first screen of a 1400x1000 window, as it opens, then as a flame
// graph (root at the bottom) in the same box, for the record.
async function firstScreen(page) {
  await settled(page);
  out.screen = await readScreen(page);
  await page.screenshot({ path: path.join(outdir, `${shots}-screen.png`) });
  await setChecked(page, "#icicle", false);
  await settled(page);
  out.screenFlame = await readScreen(page);
  await page.screenshot({ path: path.join(outdir, `${shots}-screen-flame.png`) });
  await setChecked(page, "#icicle", true);
}

async function main() {
  // lean: only what the options ask, in a 1400x1000 window (the first screen's).
  const { context, page } = await openPage(opts.lean ? { width: 1400, height: 1000 } : { width: 1280, height: 900 });
  out.timings = await page.evaluate(() => window.narwhal.timings);
  out.status = await textOf(page, "#status");
  out.title = await page.title();
  if (opts.lean && opts.screen) await firstScreen(page);
  await page.screenshot({ path: path.join(outdir, `${shots}-flame.png`), fullPage: false });
  if (!opts.lean) {
    out.flat = await flat(page);
    await tab(page, "tree");
    out.tree = (await rows(page, "#tree")).map((x) => ({ name: x.cells[2].replace(/^[▸▾]/, ""), total: num(x.cells[0]), self: num(x.cells[1]), level: +x.level }));
    await page.screenshot({ path: path.join(outdir, `${shots}-tree.png`), fullPage: true });
    out.legend = await page.$$eval("#legend span", (s) => s.map((x) => x.textContent));
  }

  if (opts.fn) {
    await tab(page, "flat");
    await fill(page, "#flat-filter", `^${opts.fn}$`);
    const row = await page.$("#flat tbody tr");
    if (!row) fail(`no flat row for ${opts.fn}`);
    await row.click();
    await fill(page, "#flat-filter", "");
    await page.screenshot({ path: path.join(outdir, `${shots}-flat.png`), fullPage: true });
    await tab(page, "sandwich");
    out.sandwich = {
      self: num(await textOf(page, "#sandwich-self")),
      total: num(await textOf(page, "#sandwich-total")),
      callers: (await rows(page, "#callers")).map((x) => ({ name: x.cells[2], all: num(x.cells[0]), func: num(x.cells[1]) })),
      callees: (await rows(page, "#callees")).map((x) => ({ name: x.cells[2], all: num(x.cells[0]), func: num(x.cells[1]) })),
    };
    await page.screenshot({ path: path.join(outdir, `${shots}-sandwich.png`), fullPage: true });
    await tab(page, "source");
    out.source = (await rows(page, "#source")).filter((x) => x.line !== undefined).map((x) => ({
      line: +x.line, self: x.cells[0] ? num(x.cells[0]) : 0, total: x.cells[1] ? num(x.cells[1]) : 0, text: x.cells[3],
    }));
    out.sourceHead = await textOf(page, "#source-head");
    await page.screenshot({ path: path.join(outdir, `${shots}-source.png`), fullPage: true });
    if (opts.disasm) await disasm(page);
  }

  if (opts.search) {
    await fill(page, "#search", opts.search);
    out.matched = await textOf(page, "#matched");
    out.matchedShare = num(await attrOf(page, "#matched", "data-share"));
    await page.screenshot({ path: path.join(outdir, `${shots}-search.png`) });
    await fill(page, "#search", "");
  }

  if (opts.zoom) {
    const b = await frameBox(page, opts.zoom);
    if (!b) fail(`no frame ${opts.zoom} in the flame graph`);
    const before = b.w;
    await page.mouse.click(b.x, b.y);
    const after = await frameBox(page, opts.zoom);
    out.zoom = {
      before, after: after.w, canvas: after.canvasW,
      reset: await isEnabled(page, "#reset-zoom"),
      hover: null,
    };
    await page.mouse.move(after.x, after.y);
    out.zoom.hover = await textOf(page, "#tooltip");
    await page.screenshot({ path: path.join(outdir, `${shots}-zoomed.png`) });
    await page.keyboard.press("Escape");
    out.zoom.afterEsc = (await frameBox(page, opts.zoom)).w;
    out.zoom.resetAfterEsc = await isEnabled(page, "#reset-zoom");
  }

  if (opts.full) {
    // Keyboard: "/" focuses the search box; arrows move in the call tree.
    await (await page.$("body")).click({ offset: { x: 5, y: 5 } });
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
    await setChecked(page, "#inverted", true);
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
    await setChecked(page, "#inverted", false);
    // The icicle is the default; unticked, a flame graph: the root at the bottom.
    const rootAt = () => page.evaluate(() => {
      const r = window.narwhal.report;
      const root = r.layout.find((l) => l.node === 0);
      return { y: root ? root.y : -1, height: document.getElementById("flame").getBoundingClientRect().height, rowH: r.layoutRow };
    });
    out.icicleDefault = await page.$eval("#icicle", (e) => e.checked);
    out.icicle = (await rootAt()).y;
    await page.screenshot({ path: path.join(outdir, `${shots}-icicle.png`) });
    await setChecked(page, "#icicle", false);
    out.flameRoot = await rootAt();
    await page.screenshot({ path: path.join(outdir, `${shots}-rootbottom.png`) });
    await setChecked(page, "#icicle", true);
    // Legible at 100 %: the tables' text is at least 12 px and nothing overflows sideways.
    out.read100 = await page.evaluate(() => ({
      font: parseFloat(getComputedStyle(document.querySelector("#tree td")).fontSize),
      overflow: document.documentElement.scrollWidth > document.documentElement.clientWidth + 1,
    }));
  }

  if (opts.metric) {
    await selectOption(page, "#metric", { label: opts.metric });
    out.metricFlat = await flat(page, 10);
    out.metricTitle = await attrOf(page, "#flat tbody tr td", "title");
    await selectOption(page, "#metric", { index: 0 });
  }

  if (opts.range) {
    const c = await box(page, "#timeline");
    const geo = await page.evaluate(() => window.narwhal.report.tl);
    const plotW = geo.width - geo.labelW - 4;
    const y = c.y + geo.rowH * 1.5;
    await page.mouse.move(c.x + geo.labelW + plotW * opts.range[0], y);
    await page.mouse.down();
    await page.mouse.move(c.x + geo.labelW + plotW * opts.range[1], y, { steps: 4 });
    await page.mouse.up();
    out.range = await page.evaluate(() => window.narwhal.report.state.range);
    out.rangeLabel = await textOf(page, "#range-label");
    out.rangeFlat = await flat(page, 10);
    await tab(page, "tree");
    await page.screenshot({ path: path.join(outdir, `${shots}-range.png`) });
    await click(page, "#range-clear");
  }

  if (opts.tid) {
    await click(page, "#threads-summary");
    await setChecked(page, "#threads-list input[data-all]", false);
    await setChecked(page, `#threads-list input[data-thread="${await page.evaluate((tid) => window.narwhal.report.prof.threads.find((t) => t.tid === tid).index, opts.tid)}"]`, true);
    await click(page, "#threads-summary");
    out.threadFlat = await flat(page, 10);
    out.threadSummary = await textOf(page, "#threads-summary");
    await tab(page, "threads");
    await page.screenshot({ path: path.join(outdir, `${shots}-threads.png`) });
  }

  if (opts.diff) {
    out.diffLegend = await textOf(page, "#diff-legend");
    // The flame graph's boxes with narwhal-report's z of their calling
    // context, and the colour drawn in the middle of each (on the canvas).
    out.diffFlame = await page.evaluate(() => {
      const r = window.narwhal.report;
      const dn = r.diffNodes();
      const t = r.view().tree;
      const fr = r.prof.frames;
      const canvas = document.getElementById("flame");
      const ctx = canvas.getContext("2d");
      const dpr = canvas.width / canvas.clientWidth;
      const pathOf = (n) => {
        const p = [];
        for (let u = n; u > 0; u = t.parent[u]) p.unshift(fr.name[t.frame[u]]);
        return p.join(";");
      };
      return r.layout.filter((b) => b.node > 0 && b.w >= 8 && dn && dn.known[b.node]).map((b) => {
        const px = ctx.getImageData(Math.round((b.x + 4) * dpr), Math.round((b.y + 2) * dpr), 1, 1).data;
        return { path: pathOf(b.node), z: dn.z[b.node], beyond: !!dn.beyond[b.node], rgb: [px[0], px[1], px[2]] };
      });
    });
    await tab(page, "flat");
    out.diffFlat = (await rows(page, "#flat")).slice(0, 10).map((x) => ({ name: x.cells[2], base: num(x.cells[5]), now: num(x.cells[6]), change: num(x.cells[7].replace("−", "-")) }));
    // narwhal-report's numbers (self change, SE, Z) and the rows greyed as within noise.
    out.diffNoise = await page.$$eval("#flat tbody tr", (trs) => trs.map((tr) => ({
      name: tr.cells[2].textContent.trim(),
      self: tr.cells[8] ? tr.cells[8].textContent.trim().replace("−", "-") : null,
      se: tr.cells[9] ? tr.cells[9].textContent.trim() : null,
      z: tr.cells[10] ? tr.cells[10].textContent.trim().replace("−", "-") : null,
      grey: tr.classList.contains("noise"),
      color: getComputedStyle(tr.cells[2]).color,
    })));
    await page.screenshot({ path: path.join(outdir, `${shots}-diff.png`) });
  }

  if (opts.groups) await groups(page);
  await context.close();

  if (opts.screen && !opts.lean) {
    const { context: c3, page: p3 } = await openPage({ width: 1400, height: 1000 });
    await firstScreen(p3);
    await c3.close();
  }

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
  browser = null;
  fail(e instanceof Failed ? e.message : e && e.stack ? e.stack : String(e));
}
await browser.close();
console.log(JSON.stringify(out, null, 1));
