// SPDX-License-Identifier: MIT
//
// Opens narwhal-report's exports in headless Chromium (Debian's chromium,
// driven by playwright-core; playwright's own browser download is not used)
// and checks that they work as a person would use them.
//
//   node browser-check.mjs svg FILE.svg OUT.png [SEARCH]
//       Loads the flame graph, takes a screenshot (OUT.png), then checks
//       that the script runs: hovering fills the details line, clicking a
//       frame zooms it to the full width and shows "Reset Zoom", the reset
//       restores the widths, and searching SEARCH highlights frames and
//       prints "Matched: N%".  Prints one JSON object of what it measured.
//
//   node browser-check.mjs svg-screen FILE.svg OUT.png
//       Opens the flame graph in a 1400x1000 window and reads its first
//       screen (OUT.png): the share of the frames' area in it that frames
//       cover, where the root is, how deep the shown frames go and how
//       deep those a pixel wide, the page's height; then clicks the
//       widest frame that has hidden frames below it: the page grows to
//       the deepest frame now a pixel wide, and Reset Zoom shrinks it back.
//
//   node browser-check.mjs speedscope FILE.json OUT.png [VIEW]
//       Serves the speedscope app from the speedscope package on 127.0.0.1,
//       opens FILE in it (#profileURL=; a speedscope file or a Trace Event
//       file, which the app imports), waits for the flame chart and takes a
//       screenshot.  With VIEW ("Time Order", "Left Heavy", "Sandwich"),
//       switches to that view first.  Prints the page title, the profile
//       names the app shows, and the profile's thread names it lists.
//
// CHROMIUM names the browser (default /usr/bin/chromium).  Exits 1 with the
// reason on stderr when a check fails.
import { createServer } from "node:http";
import { readFileSync, existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(import.meta.url);
const { chromium } = require("playwright-core");

const [mode, file, png, query] = process.argv.slice(2);
if (!mode || !file || !png) {
  console.error("usage: node browser-check.mjs svg|speedscope FILE OUT.png [SEARCH]");
  process.exit(2);
}

function fail(msg) {
  console.error(`browser-check: ${msg}`);
  process.exit(1);
}

const executablePath = process.env.CHROMIUM || "/usr/bin/chromium";
if (!existsSync(executablePath)) fail(`${executablePath} is missing (apt-get install chromium)`);

const browser = await chromium.launch({
  executablePath,
  headless: true,
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
  ],
});

try {
  if (mode === "svg") await checkSvg();
  else if (mode === "svg-screen") await checkSvgScreen();
  else if (mode === "speedscope") await checkSpeedscope();
  else fail(`unknown mode ${mode}`);
} catch (e) {
  await browser.close();
  fail(e && e.stack ? e.stack : String(e));
}
await browser.close();

async function checkSvg() {
  const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto("file://" + path.resolve(file));
  const size = await page.evaluate(() => ({
    w: +document.documentElement.getAttribute("width"),
    h: +document.documentElement.getAttribute("height"),
  }));
  await page.setViewportSize({ width: Math.max(size.w, 200), height: Math.max(size.h, 100) });
  await page.screenshot({ path: png });
  if (errors.length) fail(`script errors: ${errors.join("; ")}`);

  const r = { frames: 0 };
  r.frames = await page.locator("g.f").count();
  if (r.frames < 2) fail(`only ${r.frames} frames drawn`);
  if (!(await page.evaluate(() => typeof window.nwFlame === "object")))
    fail("the flame graph's script did not run");

  // The widest frame after the root: zoom into it by clicking its rectangle.
  const target = await page.evaluate(() => {
    const gs = Array.from(document.querySelectorAll("g.f"));
    let best = -1, bw = -1;
    gs.forEach((g, i) => {
      const w = +g.getAttribute("data-w");
      if (+g.getAttribute("data-d") > 0 && w > bw && w < +document.documentElement.getAttribute("data-total")) {
        best = i;
        bw = w;
      }
    });
    return best;
  });
  if (target < 0) fail("no frame narrower than the root to zoom into");
  const rect = page.locator("g.f").nth(target).locator("rect");
  const before = +(await rect.getAttribute("width"));
  await rect.hover();
  r.details = await page.locator("#details").textContent();
  if (!r.details || !r.details.trim()) fail("hovering a frame left the details line empty");
  await rect.click();
  const fw = await page.evaluate(() => +document.documentElement.getAttribute("data-fw"));
  r.zoomedWidth = +(await rect.getAttribute("width"));
  r.widthBefore = before;
  if (Math.abs(r.zoomedWidth - fw) > 0.05)
    fail(`clicking a frame ${before}px wide made it ${r.zoomedWidth}px, expected the full ${fw}px`);
  if (!(await page.locator("#reset").isVisible())) fail("zoomed, but no Reset Zoom shown");
  await page.screenshot({ path: png.replace(/\.png$/, "") + "-zoomed.png" });
  await page.locator("#reset").click();
  r.resetWidth = +(await rect.getAttribute("width"));
  if (Math.abs(r.resetWidth - before) > 0.05)
    fail(`Reset Zoom gave the frame ${r.resetWidth}px, it had ${before}px`);

  if (query) {
    await page.locator("#search").fill(query);
    r.matched = await page.locator("#matched").textContent();
    r.highlighted = await page.locator("g.f.hit").count();
    if (!r.highlighted || !/^Matched: [0-9.]+%$/.test(r.matched || ""))
      fail(`searching ${query} highlighted ${r.highlighted} frames, said ${JSON.stringify(r.matched)}`);
    await page.screenshot({ path: png.replace(/\.png$/, "") + "-search.png" });
    // Not a regular expression: searched for as text, no script error.
    await page.locator("#search").fill("(unbalanced[");
    r.invalidRegex = await page.locator("#matched").textContent();
    if (r.invalidRegex !== "Matched: 0.00%" || errors.length)
      fail(`searching an invalid regular expression: ${r.invalidRegex} ${errors.join("; ")}`);
    await page.locator("#search").fill("");
    if ((await page.locator("g.f.hit").count()) || (await page.locator("#matched").textContent()))
      fail("clearing the search box left frames highlighted");
  }
  console.log(JSON.stringify(r));
}

// The frames in the window: how much of their area there is covered, the
// root's place, the depths of the frames shown and of those a pixel wide.
function svgScreen(page) {
  return page.evaluate(() => {
    const svg = document.documentElement;
    const top = +svg.getAttribute("data-top");
    const fw = +svg.getAttribute("data-fw");
    const fh = +svg.getAttribute("data-fh");
    const gs = [...document.querySelectorAll("g.f")].filter((g) => g.style.display !== "none");
    let deepest = 0;
    let deepWide = 0;
    let rootTop = null;
    for (const g of gs) {
      const d = +g.getAttribute("data-d");
      const w = +g.querySelector("rect").getAttribute("width");
      deepest = Math.max(deepest, d);
      if (w >= 1) deepWide = Math.max(deepWide, d);
      if (d === 0) rootTop = g.querySelector("rect").getBoundingClientRect().top;
    }
    // The frames' area (as deep as the shown frames go) inside the window.
    const x0 = 10;
    const x1 = Math.min(window.innerWidth, 10 + fw);
    const y0 = top;
    const y1 = Math.min(window.innerHeight, top + (deepest + 1) * fh);
    let covered = 0;
    for (const g of gs) {
      const b = g.querySelector("rect").getBoundingClientRect();
      const w = Math.min(b.right, x1) - Math.max(b.left, x0);
      const h = Math.min(b.bottom, y1) - Math.max(b.top, y0);
      if (w > 0 && h > 0) covered += w * h;
    }
    return { share: covered / ((x1 - x0) * (y1 - y0)), area: [x0, y0, x1, y1], rootTop, deepest, deepWide,
      height: +svg.getAttribute("height"), top, fh, foot: +svg.getAttribute("data-foot"),
      hidden: document.querySelectorAll("g.f").length - gs.length };
  });
}

async function checkSvgScreen() {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto("file://" + path.resolve(file));
  await page.screenshot({ path: png });
  const r = { screen: await svgScreen(page) };
  if (errors.length) fail(`script errors: ${errors.join("; ")}`);
  // The deepest shown frame with hidden frames below it (the widest of
  // those): zoomed to the full width, they come into view.
  const target = await page.evaluate(() => {
    const gs = [...document.querySelectorAll("g.f")];
    const hidden = gs.filter((g) => g.style.display === "none").map((g) => [+g.getAttribute("data-s"), +g.getAttribute("data-d")]);
    let best = -1;
    let bd = 0;
    let bw = 0;
    gs.forEach((g, i) => {
      const s = +g.getAttribute("data-s");
      const w = +g.getAttribute("data-w");
      const d = +g.getAttribute("data-d");
      if (g.style.display === "none" || d === 0 || d < bd || (d === bd && w <= bw)) return;
      if (hidden.some(([hs, hd]) => hd > d && hs >= s && hs < s + w)) { best = i; bd = d; bw = w; }
    });
    return best;
  });
  if (target < 0) fail("no shown frame with hidden frames below it");
  await page.locator("g.f").nth(target).locator("rect").click();
  r.zoomed = await svgScreen(page);
  await page.screenshot({ path: png.replace(/\.png$/, "") + "-zoomed.png" });
  await page.locator("#reset").click();
  r.reset = await svgScreen(page);
  if (errors.length) fail(`script errors: ${errors.join("; ")}`);
  console.log(JSON.stringify(r));
}

async function checkSpeedscope() {
  const release = path.dirname(require.resolve("speedscope/dist/release/index.html"));
  const profile = readFileSync(file);
  const types = { ".html": "text/html", ".js": "text/javascript", ".css": "text/css",
                  ".json": "application/json", ".wasm": "application/wasm",
                  ".png": "image/png", ".woff2": "font/woff2", ".ico": "image/x-icon" };
  const server = createServer((req, res) => {
    const url = decodeURIComponent(req.url.split("?")[0].split("#")[0]);
    if (url === "/profile.json") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(profile);
      return;
    }
    const p = path.join(release, path.normalize(url === "/" ? "/index.html" : url));
    if (!p.startsWith(release) || !existsSync(p)) {
      res.writeHead(404);
      res.end();
      return;
    }
    res.writeHead(200, { "content-type": types[path.extname(p)] || "application/octet-stream" });
    res.end(readFileSync(p));
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  const port = server.address().port;
  try {
    const page = await browser.newPage({ viewport: { width: 1200, height: 700 } });
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    const base = `http://127.0.0.1:${port}`;
    await page.goto(`${base}/index.html#profileURL=${encodeURIComponent(base + "/profile.json")}`);
    // The app names the tab after the loaded profile: "NAME - speedscope".
    await page.waitForFunction(() => / - speedscope$/.test(document.title), null, { timeout: 20000 });
    await page.waitForSelector("canvas", { timeout: 20000 });
    await page.waitForTimeout(500);
    if (query) {
      await page.getByText(query).first().click();
      await page.waitForTimeout(500);
    }
    await page.screenshot({ path: png });
    const title = await page.title();
    const body = await page.evaluate(() => document.body.innerText);
    if (errors.length) fail(`the app reported errors: ${errors.join("; ")}`);
    if (/something went wrong|unrecognized format|failed to/i.test(body))
      fail(`the app could not open the file: ${body.slice(0, 300)}`);
    console.log(JSON.stringify({ title, text: body.slice(0, 400) }));
  } finally {
    server.close();
  }
}
