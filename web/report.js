// SPDX-License-Identifier: MIT
//
// Narwhal's HTML report: the page's code.  Plain modern JavaScript, no
// framework, nothing fetched: the profile is in the page (gzipped JSON in
// base64, see src/export/html.c for its shape).
//
// One state object says what is shown (threads, metric, time range, zoomed
// frame path, selected function, search, inverted, icicle, tab); every view
// is redrawn from it by render().  What the views read is derived from the
// state in steps, each cached under the part of the state it depends on:
//
//   threads            -> merged tree (nodes keyed by parent and frame)
//   + metric + range   -> self and total weight per node
//   + inverted         -> the inverted tree and its weights
//   + zoom, search     -> flame graph layout, matched share
//
// so that a click, a search or a range selection redoes only the last
// steps.  window.narwhal exposes the state and timings to the tests and the
// benchmark (tests/js/html-check.mjs, bench/html.py).

(function () {
  "use strict";

  const $ = (id) => document.getElementById(id);
  const timings = { start: performance.now() };

  // ---- loading ----

  async function loadData() {
    const el = $("nw-data");
    const text = el.textContent;
    const raw = atob(text.replace(/\s+/g, ""));
    const bytes = new Uint8Array(raw.length);
    for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
    // Not a request: the stream reads the bytes above.
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    const json = await new Response(stream).text();
    el.textContent = "";
    return JSON.parse(json);
  }

  // ---- the profile in typed arrays ----

  function prepareProfile(p, strings) {
    const f = p.frames;
    const nf = f.name.length;
    const frames = {
      n: nf,
      name: f.name.map((i) => strings[i]),
      module: f.module.map((i) => (i >= 0 ? strings[i] : "")),
      file: f.file.map((i) => (i >= 0 ? strings[i] : "")),
      line: f.line,
      kind: f.kind,
    };
    // Children are drawn in name order, as the SVG flame graph draws them.
    const order = Array.from({ length: nf }, (_, i) => i);
    order.sort((a, b) => (frames.name[a] < frames.name[b] ? -1 : frames.name[a] > frames.name[b] ? 1 : 0));
    frames.rank = new Int32Array(nf);
    order.forEach((fi, r) => { frames.rank[fi] = r; });
    // The threads' arrays come column by column (src/export/html.c); parents as steps back.
    const threads = p.threads.map((t, index) => {
      const n = p.parent[index].length;
      const parent = new Int32Array(n);
      p.parent[index].forEach((d, i) => { parent[i] = d ? i - d : -1; });
      const th = {
        index,
        tid: t.tid,
        pid: t.pid,
        comm: strings[t.comm],
        samples: t.samples,
        first: t.first,
        last: t.last,
        n,
        parent,
        frame: Int32Array.from(p.frame[index]),
        line: Int32Array.from(p.line[index]),
        self: p.self[index].map((v) => Float64Array.from(v)),
        trace: null,
      };
      if (p.trace[index]) {
        const tr = p.trace[index];
        const m = tr.dt.length;
        const time = new Float64Array(m);
        const node = new Int32Array(m);
        let at = 0;
        for (let i = 0; i < m; i++) {
          at += tr.dt[i];
          time[i] = at;
          node[i] = tr.node[i];
        }
        th.trace = {
          n: m,
          time,
          node,
          code: tr.code ? Int32Array.from(tr.code) : null,
          code1: tr.code1 ?? 0,
          value: tr.value ? Float64Array.from(tr.value) : null,
          value1: tr.value1 ?? 0,
        };
      }
      return th;
    });
    // Each process's name, as the recorder knew it (its threads may be named otherwise).
    const procNames = new Map((p.processes || []).map((x) => [x.pid, strings[x.comm]]));
    return { frames, threads, metrics: p.metrics, procNames };
  }

  // ---- derived trees ----

  // A map from (parent, frame) pairs to node numbers: open addressing over
  // typed arrays, several times faster than a Map for the 100 K-node trees
  // the page must merge and invert within a click.
  class PairMap {
    constructor(cap) {
      let n = 1024;
      while (n < cap * 2) n *= 2;
      this.mask = n - 1;
      this.a = new Int32Array(n).fill(-1);
      this.b = new Int32Array(n);
      this.v = new Int32Array(n);
      this.size = 0;
    }

    slot(a, b) {
      let h = (Math.imul(a, 0x9e3779b1) ^ Math.imul(b + 1, 0x85ebca6b)) & this.mask;
      while (this.a[h] !== -1 && (this.a[h] !== a || this.b[h] !== b)) h = (h + 1) & this.mask;
      return h;
    }

    get(a, b) {
      const h = this.slot(a, b);
      return this.a[h] === -1 ? -1 : this.v[h];
    }

    set(a, b, v) {
      if ((this.size + 1) * 2 > this.mask) this.grow();
      const h = this.slot(a, b);
      if (this.a[h] === -1) this.size++;
      this.a[h] = a;
      this.b[h] = b;
      this.v[h] = v;
    }

    grow() {
      const { a, b, v } = this;
      const n = (this.mask + 1) * 2;
      this.mask = n - 1;
      this.a = new Int32Array(n).fill(-1);
      this.b = new Int32Array(n);
      this.v = new Int32Array(n);
      this.size = 0;
      for (let i = 0; i < a.length; i++) if (a[i] !== -1) this.set(a[i], b[i], v[i]);
    }
  }

  // The selected threads merged into one tree: node 0 is the root; map[t][i]
  // is the merged node of node i of thread t.  Nodes come parents first.
  function mergeThreads(prof, sel) {
    let nodes = 0;
    for (const ti of sel) nodes += prof.threads[ti].n;
    const key = new PairMap(nodes);
    let cap = 1024;
    let parent = new Int32Array(cap);
    let frame = new Int32Array(cap);
    parent[0] = -1;
    frame[0] = -1;
    let n = 1;
    const map = new Map();
    for (const ti of sel) {
      const t = prof.threads[ti];
      const m = new Int32Array(t.n);
      for (let i = 0; i < t.n; i++) {
        const p = t.parent[i];
        if (p < 0) { m[i] = 0; continue; }
        const mp = m[p];
        let id = key.get(mp, t.frame[i]);
        if (id < 0) {
          if (n === cap) {
            cap *= 2;
            const np = new Int32Array(cap); np.set(parent); parent = np;
            const nfr = new Int32Array(cap); nfr.set(frame); frame = nfr;
          }
          id = n++;
          parent[id] = mp;
          frame[id] = t.frame[i];
          key.set(mp, t.frame[i], id);
        }
        m[i] = id;
      }
      map.set(ti, m);
    }
    return finishTree({ n, parent: parent.subarray(0, n), frame: frame.subarray(0, n), map }, prof.frames);
  }

  // Children lists (in frame name order), preorder, subtree ends, depth.
  function finishTree(t, frames) {
    const n = t.n;
    const count = new Int32Array(n + 1);
    for (let i = 1; i < n; i++) count[t.parent[i] + 1]++;
    for (let i = 1; i <= n; i++) count[i] += count[i - 1];
    const kids = new Int32Array(Math.max(n - 1, 0));
    const fill = count.slice(0, n);
    // The nodes in frame name order (a counting sort by rank), then each
    // into its parent's list: every list comes out sorted, in O(n).
    const rank = frames.rank;
    const byRank = new Int32Array(frames.n + 1);
    for (let i = 1; i < n; i++) byRank[rank[t.frame[i]] + 1]++;
    for (let r = 1; r <= frames.n; r++) byRank[r] += byRank[r - 1];
    const sorted = new Int32Array(Math.max(n - 1, 0));
    for (let i = 1; i < n; i++) sorted[byRank[rank[t.frame[i]]]++] = i;
    for (let j = 0; j < n - 1; j++) {
      const i = sorted[j];
      kids[fill[t.parent[i]]++] = i;
    }
    // Preorder without a stack: parents come before their children, so
    // subtree sizes add up backwards, and each node's children take their
    // places after it, in list order, going forwards.
    const size = new Int32Array(n).fill(1);
    for (let i = n - 1; i > 0; i--) size[t.parent[i]] += size[i];
    const pre = new Int32Array(n);
    const end = new Int32Array(n);
    const depth = new Int32Array(n);
    const pos = new Int32Array(n);
    let maxDepth = 0;
    for (let v = 0; v < n; v++) {
      let at = pos[v] + 1;
      pre[pos[v]] = v;
      end[v] = pos[v] + size[v];
      if (depth[v] > maxDepth) maxDepth = depth[v];
      for (let j = count[v]; j < count[v + 1]; j++) {
        const c = kids[j];
        pos[c] = at;
        depth[c] = depth[v] + 1;
        at += size[c];
      }
    }
    Object.assign(t, { kidStart: count, kids, pre, pos, end, depth, maxDepth });
    return t;
  }

  function childrenOf(t, v) {
    return t.kids.subarray(t.kidStart[v], t.kidStart[v + 1]);
  }

  // Which trace events a metric counts: those of its event, one each or their value.
  function metricSource(data, k) {
    for (let e = 0; e < data.events.length; e++) {
      if (data.events[e].count === k) return { event: e, byValue: false };
      if (data.events[e].sum === k) return { event: e, byValue: true };
    }
    return null;
  }

  // Self weight of each node of thread t, for metric k, over the time range (or all of it).
  function threadSelf(th, k, range, src) {
    if (!range || !th.trace || !src) return th.self[k];
    const tr = th.trace;
    const out = new Float64Array(th.n);
    let lo = 0;
    let hi = tr.n;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (tr.time[mid] < range[0]) lo = mid + 1; else hi = mid; }
    for (let i = lo; i < tr.n && tr.time[i] < range[1]; i++) {
      const code = tr.code ? tr.code[i] : tr.code1;
      if (code >> 1 !== src.event) continue;
      out[tr.node[i]] += src.byValue ? (tr.value ? tr.value[i] : tr.value1) : 1;
    }
    return out;
  }

  // Self and total per merged node, and the root's total.
  function weigh(tree, prof, sel, k, range, src) {
    const self = new Float64Array(tree.n);
    const perThread = new Map();
    for (const ti of sel) {
      const th = prof.threads[ti];
      const s = threadSelf(th, k, range, src);
      perThread.set(ti, s);
      const m = tree.map.get(ti);
      for (let i = 0; i < th.n; i++) if (s[i]) self[m[i]] += s[i];
    }
    const total = accumulate(tree, self);
    return { self, total, perThread };
  }

  function accumulate(tree, self) {
    const total = Float64Array.from(self);
    for (let j = tree.n - 1; j > 0; j--) {
      const v = tree.pre[j];
      total[tree.parent[v]] += total[v];
    }
    return total;
  }

  // The tree turned bottom up: each node's self weight becomes a path from
  // its frame up to the root's child, the leaves' functions at the base.
  // Built level by level without hashing: the weighted nodes are cursors
  // that climb to their parents.  The cursors under one inverted node are
  // contiguous; within such a run, the first cursor to reach a frame makes
  // the child node for it (a stamp per frame says which run it was made
  // in), and one counting sort by child node makes the runs of the next
  // level.
  function invertTree(tree, w, frames) {
    const t0 = performance.now();
    const nf = frames.n;
    let m = 0;
    for (let v = 1; v < tree.n; v++) if (w.self[v]) m++;
    let cu = new Int32Array(m);
    let cw = new Float64Array(m);
    let cg = new Int32Array(m);
    m = 0;
    for (let v = 1; v < tree.n; v++) if (w.self[v]) { cu[m] = v; cw[m] = w.self[v]; m++; }
    let cap = Math.max(1024, m * 2);
    let parent = new Int32Array(cap);
    let frame = new Int32Array(cap);
    let self = new Float64Array(cap);
    parent[0] = -1;
    frame[0] = -1;
    let n = 1;
    const stamp = new Int32Array(nf).fill(-1);
    const nodeOf = new Int32Array(nf);
    let node = new Int32Array(m);
    while (m > 0) {
      if (n + m > cap) {
        while (n + m > cap) cap *= 2;
        const np = new Int32Array(cap); np.set(parent); parent = np;
        const nfr = new Int32Array(cap); nfr.set(frame); frame = nfr;
        const ns = new Float64Array(cap); ns.set(self); self = ns;
      }
      const levelLo = n;
      let k = 0;
      for (let i = 0; i < m; i++) {
        const f = tree.frame[cu[i]];
        if (stamp[f] !== cg[i]) {
          stamp[f] = cg[i];
          nodeOf[f] = n;
          parent[n] = cg[i];
          frame[n] = f;
          n++;
        }
        const id = nodeOf[f];
        const up = tree.parent[cu[i]];
        if (up > 0) { cu[k] = up; cw[k] = cw[i]; node[k] = id; k++; } else self[id] += cw[i];
      }
      // The next level's runs: the cursors by the node they are under.
      const width = n - levelLo;
      const runAt = new Int32Array(width + 1);
      for (let i = 0; i < k; i++) runAt[node[i] - levelLo + 1]++;
      for (let g = 1; g <= width; g++) runAt[g] += runAt[g - 1];
      const nu = new Int32Array(k);
      const nw = new Float64Array(k);
      const ng = new Int32Array(k);
      for (let i = 0; i < k; i++) {
        const at = runAt[node[i] - levelLo]++;
        nu[at] = cu[i];
        nw[at] = cw[i];
        ng[at] = node[i];
      }
      cu = nu; cw = nw; cg = ng; m = k;
      node = new Int32Array(m);
    }
    timings.invertPaths = performance.now() - t0;
    const t = finishTree({ n, parent: parent.subarray(0, n), frame: frame.subarray(0, n) }, frames);
    timings.invertFinish = performance.now() - t0 - timings.invertPaths;
    const sf = self.slice(0, n);
    return { tree: t, w: { self: sf, total: accumulate(t, sf) } };
  }

  // Per function: self, and total counted once per stack (recursion).
  function flatOf(tree, w, nframes) {
    const self = new Float64Array(nframes);
    const total = new Float64Array(nframes);
    const open = new Int32Array(nframes);
    const stack = [];
    for (let j = 1; j < tree.n; j++) {
      const v = tree.pre[j];
      while (stack.length && tree.end[stack[stack.length - 1]] <= j) open[tree.frame[stack.pop()]]--;
      const f = tree.frame[v];
      self[f] += w.self[v];
      if (!open[f]) total[f] += w.total[v];
      open[f]++;
      stack.push(v);
    }
    return { self, total };
  }

  // ---- formatting ----

  function pct(v, total) {
    return total > 0 ? (100 * v / total).toFixed(2) + "%" : "0.00%";
  }

  function fmtValue(v, metric) {
    if (metric.unit === "nanoseconds") {
      if (v >= 1e9) return (v / 1e9).toFixed(3) + " s";
      if (v >= 1e6) return (v / 1e6).toFixed(2) + " ms";
      if (v >= 1e3) return (v / 1e3).toFixed(1) + " µs";
      return v + " ns";
    }
    return String(Math.round(v)) + " " + metric.short;
  }

  function fmtTime(us) {
    return (us / 1e6).toFixed(3) + " s";
  }

  function esc(s) {
    return String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
  }

  function baseName(path) {
    const i = path.lastIndexOf("/");
    return i >= 0 ? path.slice(i + 1) : path;
  }

  // A hue per module, from its file name: libc keeps its colour in every report.
  function hashHue(s) {
    let h = 2166136261;
    for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619); }
    return ((h >>> 0) % 360);
  }

  function frameColor(frames, fi) {
    const mod = frames.module[fi];
    if (frames.kind[fi] === 2) return "hsl(0,0%,78%)";
    if (mod === "[kernel.kallsyms]") return "hsl(30,85%,62%)";
    const hue = hashHue(baseName(mod || "?"));
    const name = frames.name[fi];
    const light = 68 + (hashHue(name) % 12);
    return `hsl(${hue},60%,${light}%)`;
  }

  function diffColor(delta, maxAbs) {
    if (!maxAbs || Math.abs(delta) < 1e-9) return "hsl(0,0%,82%)";
    const a = Math.min(1, Math.abs(delta) / maxAbs);
    const light = 92 - 40 * a;
    return delta > 0 ? `hsl(0,80%,${light}%)` : `hsl(220,80%,${light}%)`;
  }

  // ---- the page ----

  // Processes folded into the timeline's "N more" row (Report.groups()).
  const FOLD_LIGHT = 0.01;
  const FOLD_SHORT = 0.1;
  const FOLD_MAX = 40;
  const FOLD_MIN = 12;

  class Report {
    constructor(data) {
      this.data = data;
      this.strings = data.strings;
      this.prof = prepareProfile(data.profile, data.strings);
      this.base = data.base ? prepareProfile(data.base, data.strings) : null;
      this.metrics = data.metrics;
      this.duration = data.duration || 0;
      this.sources = new Map((data.sources || []).map((s) => [this.strings[s.file], s.lines]));
      // The Disassembly panel's functions, by name (narwhal-report's export/htmlasm.c).
      this.disasm = new Map((data.disasm || []).map((d) => [this.strings[d.fn], d]));
      this.state = {
        threads: this.prof.threads.map((t) => t.index),
        metric: data.metric || 0,
        range: null,
        zoom: [],
        selected: -1,
        search: "",
        inverted: false,
        // An icicle, the root on top: the root and the widest frames are in
        // the first screen whatever the depth (doc/EXPORTS.md).
        icicle: true,
        tab: "tree",
        sort: { tree: "total", flat: "self" },
        flatFilter: "",
        disasmFilter: "",
        disasmLine: null,
        expanded: new Set(),
        cursor: null,
        // The timeline's and the selectors' rows: processes busiest first
        // ("busy") or in creation order ("created"), those open (by group
        // id), the folded ones open, the filter; rowsV counts changes.
        order: "busy",
        open: new Set(),
        moreOpen: false,
        filter: "",
        rowsV: 0,
        // The Process selector's choice: "", a group id, "more" or "some".
        process: "",
      };
      this.cache = {};
      this.layout = [];
    }

    // -- derived data, cached --

    threadsKey() { return this.state.threads.join(","); }

    // Every thread merged once; choosing threads only re-weighs the tree
    // (the others' nodes weigh nothing and are not drawn).
    merged() {
      if (!this.cache.merged) this.cache.merged = mergeThreads(this.prof, this.prof.threads.map((t) => t.index));
      return this.cache.merged;
    }

    weights() {
      const tree = this.merged();
      const st = this.state;
      const key = `${this.threadsKey()}|${st.metric}|${st.range ? st.range.join("-") : ""}`;
      if (this.cache.weightKey !== key) {
        const src = metricSource(this.data, st.metric);
        this.cache.weights = weigh(tree, this.prof, st.threads, st.metric, st.range, src);
        this.cache.weightKey = key;
        this.cache.viewKey = null;
        this.cache.flatKey = null;
      }
      return this.cache.weights;
    }

    // The tree the flame graph and the call tree show: merged, or inverted.
    view() {
      const w = this.weights();
      const key = `${this.cache.weightKey}|${this.state.inverted}`;
      if (this.cache.viewKey !== key) {
        if (this.state.inverted) {
          // Kept while the weights stay: turning inversion off and on again is free.
          if (this.cache.invKey !== this.cache.weightKey) {
            this.cache.inv = invertTree(this.merged(), w, this.prof.frames);
            this.cache.invKey = this.cache.weightKey;
          }
          this.cache.view = this.cache.inv;
        } else {
          this.cache.view = { tree: this.merged(), w };
        }
        this.cache.viewKey = key;
        this.cache.baseKey = null;
      }
      return this.cache.view;
    }

    flat() {
      const w = this.weights();
      if (this.cache.flatKey !== this.cache.weightKey) {
        this.cache.flat = flatOf(this.merged(), w, this.prof.frames.n);
        this.cache.flatKey = this.cache.weightKey;
      }
      return this.cache.flat;
    }

    // Differential mode: narwhal-report's flat diff (src/export/htmldiff.h),
    // by function name: each function's change of self share with its
    // standard error and z, and whether it is beyond noise.  Computed for
    // every thread and the report's metric over the whole run: null when
    // the page shows something else.
    diffRows() {
      const dd = this.data.diff;
      const st = this.state;
      if (!dd || st.metric !== (this.data.metric || 0) || st.range ||
          st.threads.length !== this.prof.threads.length) return null;
      if (!this.cache.diffRows) {
        const m = new Map();
        for (const [name, delta, se, z, beyond] of dd.rows) m.set(name, { delta, se, z, beyond: !!beyond });
        this.cache.diffRows = m;
      }
      return this.cache.diffRows;
    }

    // Differential mode: narwhal-report's change of each node of the view
    // (its calling context in the joined tree, matched by frame names along
    // the path): its z, and whether it is beyond noise; null where the view
    // is not what narwhal-report diffed (see diffRows(); not inverted).
    diffNodes() {
      const dd = this.data.diff;
      if (!dd || !dd.contexts || this.state.inverted || !this.diffRows()) return null;
      const t = this.view().tree;
      if (this.cache.diffNodes && this.cache.diffNodesTree === t) return this.cache.diffNodes;
      const key = new Map();
      dd.contexts.forEach(([parent, name], i) => key.set(parent + "\u0001" + name, i));
      const at = new Int32Array(t.n).fill(-1);
      const z = new Float64Array(t.n);
      const known = new Uint8Array(t.n);
      const beyond = new Uint8Array(t.n);
      for (let j = 1; j < t.n; j++) {
        const i = t.pre[j];
        const p = t.parent[i];
        if (p !== 0 && at[p] < 0) continue;
        const c = key.get((p === 0 ? -1 : at[p]) + "\u0001" + this.prof.frames.name[t.frame[i]]);
        if (c === undefined) continue;
        at[i] = c;
        known[i] = 1;
        z[i] = dd.contexts[c][3];
        beyond[i] = dd.contexts[c][4];
      }
      this.cache.diffNodes = { z, known, beyond };
      this.cache.diffNodesTree = t;
      return this.cache.diffNodes;
    }

    // Differential mode: the base measurement's share for each node of the
    // view and each function, matched by frame names along the path.
    baseShares() {
      if (!this.base) return null;
      const v = this.view();
      if (this.cache.baseKey === this.cache.viewKey) return this.cache.baseShares;
      const b = this.base;
      let bk = b.metrics.indexOf(this.metrics[this.state.metric].name);
      if (bk < 0) bk = 0;
      if (!this.cache.baseTree) {
        this.cache.baseTree = mergeThreads(b, b.threads.map((t) => t.index));
      }
      const bt = this.cache.baseTree;
      let bw = weigh(bt, b, b.threads.map((t) => t.index), bk, null, null);
      let btree = bt;
      if (this.state.inverted) {
        const inv = invertTree(bt, bw, b.frames);
        btree = inv.tree;
        bw = inv.w;
      }
      // Frames match by name, as folded stacks do: nodes of one parent with
      // the same name (the same function in two modules) count as one.
      const name = (fr, f) => fr.name[f];
      const bkey = new Map();
      const bsum = new Float64Array(btree.n);
      const bcanon = new Int32Array(btree.n);
      for (let j = 1; j < btree.n; j++) {
        const i = btree.pre[j];
        const k = bcanon[btree.parent[i]] + "\u0001" + name(b.frames, btree.frame[i]);
        let c = bkey.get(k);
        if (c === undefined) { c = i; bkey.set(k, c); }
        bcanon[i] = c;
        bsum[c] += bw.total[i];
      }
      const t = v.tree;
      const total = v.w.total[0] || 1;
      const match = new Int32Array(t.n).fill(-1);
      match[0] = 0;
      const nkey = new Map();
      const ncanon = new Int32Array(t.n);
      const nsum = new Float64Array(t.n);
      const share = new Float64Array(t.n);
      const delta = new Float64Array(t.n);
      const btotal = bw.total[0] || 1;
      for (let j = 1; j < t.n; j++) {
        const i = t.pre[j];
        const nm = name(this.prof.frames, t.frame[i]);
        const k = ncanon[t.parent[i]] + "\u0001" + nm;
        let c = nkey.get(k);
        if (c === undefined) { c = i; nkey.set(k, c); }
        ncanon[i] = c;
        nsum[c] += v.w.total[i] / total;
        const mp = match[t.parent[i]];
        const m = mp < 0 ? undefined : bkey.get(mp + "\u0001" + nm);
        if (m === undefined) continue;
        match[i] = m;
        share[i] = bsum[m] / btotal;
      }
      for (let i = 1; i < t.n; i++) delta[i] = nsum[ncanon[i]] - share[i];
      share[0] = 1;
      const bflat = flatOf(bt, weigh(bt, b, b.threads.map((x) => x.index), bk, null, null), b.frames.n);
      const byName = new Map();
      const broot = bw.total[0] || 1;
      for (let f = 0; f < b.frames.n; f++) {
        const nm = b.frames.name[f];
        const e = byName.get(nm) || { self: 0, total: 0 };
        e.self += bflat.self[f] / broot;
        e.total += bflat.total[f] / broot;
        byName.set(nm, e);
      }
      this.cache.baseShares = { node: share, delta, byName, total: btotal };
      this.cache.baseKey = this.cache.viewKey;
      return this.cache.baseShares;
    }

    // The threads grouped by process: each group (id: its place in
    // creation order) with its threads, its weight in the metric (the
    // whole run) and its lifetime; "busy" holds them heaviest first.
    // Processes both light and short (under FOLD_LIGHT of the weight,
    // alive under FOLD_SHORT of the run), and those past the FOLD_MAX
    // heaviest, are folded: the timeline and the selectors show them as
    // one "N more" row.  Nothing is folded among FOLD_MIN processes or fewer.
    groups() {
      const k = this.state.metric;
      if (this.cache.groupsKey === k) return this.cache.groups;
      const threads = this.prof.threads;
      const weight = new Float64Array(threads.length);
      const byPid = new Map();
      const procs = [];
      let total = 0;
      let end = this.duration;
      for (const th of threads) {
        const s = th.self[k];
        let v = 0;
        for (let i = 0; i < th.n; i++) v += s[i];
        weight[th.index] = v;
        total += v;
        let p = byPid.get(th.pid);
        if (!p) {
          p = { id: procs.length, pid: th.pid, comm: this.prof.procNames.get(th.pid) ?? th.comm, threads: [], weight: 0, first: Infinity, last: -Infinity, folded: false };
          byPid.set(th.pid, p);
          procs.push(p);
        }
        p.threads.push(th.index);
        p.weight += v;
        if (th.first !== undefined && th.last !== undefined) {
          p.first = Math.min(p.first, th.first);
          p.last = Math.max(p.last, th.last);
          end = Math.max(end, th.last);
        }
      }
      const busy = procs.slice().sort((a, b) => b.weight - a.weight || a.id - b.id);
      let nfolded = 0;
      if (procs.length > FOLD_MIN) {
        busy.forEach((p, i) => {
          const life = p.last >= p.first ? p.last - p.first : 0;
          p.folded = i >= FOLD_MAX || (p.weight < FOLD_LIGHT * total && life < FOLD_SHORT * end);
          if (p.folded) nfolded++;
        });
      }
      const nthreads = threads.length;
      this.cache.groups = { procs, busy, weight, total, nfolded, nthreads };
      this.cache.groupsKey = k;
      return this.cache.groups;
    }

    // The rows of the timeline and of the thread list: each process (a
    // process of one thread is that thread's row), its threads below it
    // when open, the folded processes behind one "more" row; with a
    // filter, every process and thread it matches instead, nothing folded.
    // Each row lists the threads it sums.  rows.matching: the threads the
    // filter matches (a process's name matches all of its threads).
    rows() {
      const st = this.state;
      const g = this.groups();
      const key = `${this.cache.groupsKey}|${st.order}|${st.filter}|${st.rowsV}`;
      if (this.cache.rowsKey === key) return this.cache.rows;
      const created = st.order === "created";
      const list = created ? g.procs : g.busy;
      const threadOrder = (ts) => (created ? ts.slice() : ts.slice().sort((a, b) => g.weight[b] - g.weight[a] || a - b));
      const rows = [];
      const addProc = (p, depth, open, ts) => {
        if (p.threads.length === 1) {
          rows.push({ kind: "thread", p, ti: p.threads[0], depth, threads: p.threads, single: true });
          return;
        }
        rows.push({ kind: "proc", p, depth, open, threads: p.threads });
        if (open) for (const ti of threadOrder(ts)) rows.push({ kind: "thread", p, ti, depth: depth + 1, threads: [ti] });
      };
      const f = st.filter.trim().toLowerCase();
      let matching = null;
      if (f) {
        matching = [];
        const threads = this.prof.threads;
        const hit = (name, id) => name.toLowerCase().includes(f) || String(id) === f;
        for (const p of list) {
          const ts = hit(p.comm, p.pid) ? p.threads : p.threads.filter((ti) => hit(threads[ti].comm, threads[ti].tid));
          if (!ts.length) continue;
          addProc(p, 0, true, ts);
          matching.push(...ts);
        }
        matching.sort((a, b) => a - b);
      } else {
        for (const p of list) if (!p.folded) addProc(p, 0, st.open.has(p.id), p.threads);
        if (g.nfolded) {
          const folded = list.filter((p) => p.folded);
          rows.push({ kind: "more", procs: folded, depth: 0, open: st.moreOpen, threads: folded.flatMap((p) => p.threads) });
          if (st.moreOpen) for (const p of folded) addProc(p, 1, st.open.has(p.id), p.threads);
        }
      }
      rows.matching = matching;
      this.cache.rows = rows;
      this.cache.rowsKey = key;
      return rows;
    }

    // The node of the view at the zoom path, or the root.
    zoomNode() {
      const { tree } = this.view();
      let at = 0;
      for (const f of this.state.zoom) {
        let next = -1;
        for (const c of childrenOf(tree, at)) if (tree.frame[c] === f) { next = c; break; }
        if (next < 0) break;
        at = next;
      }
      return at;
    }

    pathOf(tree, v) {
      const p = [];
      for (let u = v; u > 0; u = tree.parent[u]) p.push(tree.frame[u]);
      return p.reverse();
    }

    searchRe() {
      if (!this.state.search) return null;
      try { return new RegExp(this.state.search); } catch { return undefined; }
    }

    // Matched frames (by frame index) and the share of the zoomed subtree
    // they hold, nested matches counted once.
    matches() {
      const re = this.searchRe();
      const v = this.view();
      const key = `${this.cache.viewKey}|${this.state.search}`;
      if (this.cache.matchKey === key) return this.cache.matchVal;
      let val = null;
      if (re) {
        const fr = this.prof.frames;
        const hit = new Uint8Array(fr.n);
        for (let f = 0; f < fr.n; f++) hit[f] = re.test(fr.name[f]) ? 1 : 0;
        const t = v.tree;
        let sum = 0;
        for (let j = 1; j < t.n;) {
          const node = t.pre[j];
          if (hit[t.frame[node]]) { sum += v.w.total[node]; j = t.end[node]; } else j++;
        }
        val = { hit, sum };
      }
      this.cache.matchKey = key;
      this.cache.matchVal = val;
      return val;
    }
  }

  // ---- rendering ----

  function setStatus(msg, error) {
    const s = $("status");
    s.textContent = msg;
    s.classList.toggle("error", !!error);
  }

  function metricOf(r) { return r.metrics[r.state.metric]; }

  function render(r, what) {
    const t0 = performance.now();
    const all = !what;
    let t = performance.now();
    const lap = (name) => { const now = performance.now(); timings[name] = now - t; t = now; };
    r.view();
    lap("derive");
    if (all || what.flame) drawFlame(r);
    lap("flame");
    if (all || what.timeline) drawTimeline(r);
    else if (what.later) timelineLater(r);
    lap("timeline");
    renderTab(r);
    lap("table");
    updateBar(r);
    timings.lastRender = performance.now() - t0;
  }

  // The timeline's marks of the selected function, after the frame that
  // shows what a click asked for (the zoom, the tables): they take a pass
  // over every sample, which the click should not wait for.
  function timelineLater(r) {
    if (r.timelinePending) return;
    r.timelinePending = true;
    requestAnimationFrame(() => setTimeout(() => {
      r.timelinePending = false;
      const t0 = performance.now();
      drawTimeline(r);
      timings.timelineLater = performance.now() - t0;
    }, 0));
  }

  function updateBar(r) {
    const st = r.state;
    const m = r.matches();
    const re = r.searchRe();
    const out = $("matched");
    if (re === undefined) out.textContent = "invalid regular expression";
    else if (m) {
      const { w } = r.view();
      out.textContent = "Matched: " + pct(m.sum, w.total[0]);
      out.dataset.share = w.total[0] ? (100 * m.sum / w.total[0]).toFixed(4) : "0";
    } else {
      out.textContent = "";
      delete out.dataset.share;
    }
    $("reset-zoom").disabled = st.zoom.length === 0;
    $("range-clear").hidden = !st.range;
    $("range-label").textContent = st.range ? `range ${fmtTime(st.range[0])} – ${fmtTime(st.range[1])}` : "";
    const nsel = st.threads.length;
    $("threads-summary").textContent = nsel === r.prof.threads.length ? `All threads (${nsel})` : `${nsel} of ${r.prof.threads.length} threads`;
    const g = r.groups();
    const hits = r.rows().matching;
    $("tl-count").textContent = `${g.nthreads} thread${g.nthreads === 1 ? "" : "s"} in ${g.procs.length} process${g.procs.length === 1 ? "" : "es"}` +
      (hits ? `; ${hits.length} match` : g.nfolded ? `; ${g.nfolded} short and light folded` : "");
    $("tl-only").hidden = !hits || !hits.length;
  }

  // -- flame graph --

  const ROW = () => Math.round(parseFloat(getComputedStyle(document.documentElement).fontSize) * 1.15);

  function drawFlame(r) {
    const canvas = $("flame");
    const { tree, w } = r.view();
    const st = r.state;
    const fr = r.prof.frames;
    const zoom = r.zoomNode();
    const rowH = ROW();
    const fontPx = Math.round(rowH * 0.72);
    const width = canvas.parentElement.clientWidth;
    const zt = w.total[zoom] || 1;
    const scale = width / zt;
    // The frames of the zoomed subtree at least 0.3 px wide, in preorder;
    // the graph is as deep as the deepest of them at least a pixel wide
    // (all below it are narrower), not as the deepest stack.
    const minW = 0.3;
    const bNode = [];
    const bX = [];
    const bW = [];
    let deep = tree.depth[zoom];
    {
      const x0 = new Float64Array(tree.n);
      const stop = tree.end[zoom];
      for (let j = tree.pos[zoom]; j < stop;) {
        const v = tree.pre[j];
        const wd = w.total[v] * scale;
        if (wd < minW || (w.total[v] === 0 && v !== zoom)) { j = tree.end[v]; continue; }
        bNode.push(v);
        bX.push(x0[v]);
        bW.push(wd);
        if (wd >= 1 && tree.depth[v] > deep) deep = tree.depth[v];
        let cx = x0[v];
        for (const c of childrenOf(tree, v)) { x0[c] = cx; cx += w.total[c] * scale; }
        j++;
      }
    }
    const rows = deep + 1;
    const height = rowH * Math.max(rows, 4) + 2;
    r.flameRows = rows;
    const dpr = window.devicePixelRatio || 1;
    canvas.width = Math.round(width * dpr);
    canvas.height = Math.round(height * dpr);
    canvas.style.height = height + "px";
    const ctx = canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, height);
    ctx.font = `${fontPx}px ui-monospace, "DejaVu Sans Mono", monospace`;
    ctx.textBaseline = "middle";
    const charW = ctx.measureText("m").width || fontPx * 0.6;
    const m = r.matches();
    const bs = r.baseShares();
    const dn = bs ? r.diffNodes() : null;
    let maxAbs = 0;
    if (bs) {
      for (let i = 1; i < tree.n; i++) {
        const d = Math.abs(bs.delta[i]);
        if (d > maxAbs) maxAbs = d;
      }
    }
    const layout = [];
    const yOf = (d) => (st.icicle ? d * rowH : height - (d + 1) * rowH);
    // Ancestors of the zoomed node: full width, faded.
    const anc = [];
    for (let u = zoom; u >= 0; u = tree.parent[u]) { anc.push(u); if (u === 0) break; }
    const drawBox = (node, x, wd, d, faded) => {
      const y = yOf(d);
      const fi = tree.frame[node];
      let color;
      if (node === 0) color = "hsl(0,0%,85%)";
      else if (dn && dn.known[node] && !dn.beyond[node]) color = "hsl(0,0%,88%)";
      else if (bs) color = diffColor(bs.delta[node], maxAbs);
      else color = frameColor(fr, fi);
      const hit = m && node !== 0 && m.hit[fi];
      ctx.globalAlpha = faded ? 0.55 : 1;
      ctx.fillStyle = hit ? "hsl(300,70%,62%)" : color;
      ctx.fillRect(x, y, Math.max(wd - 0.5, 0.5), rowH - 1);
      if (hit && wd > 3) {
        // A match is marked by more than its colour: a dark bar on its top edge.
        ctx.fillStyle = "#000";
        ctx.fillRect(x, y, Math.max(wd - 0.5, 0.5), 2);
      }
      if (node !== 0 && fi === st.selected && wd > 2) {
        ctx.strokeStyle = "#000";
        ctx.lineWidth = 2;
        ctx.strokeRect(x + 1, y + 1, Math.max(wd - 2.5, 0.5), rowH - 3);
      }
      const label = node === 0 ? "all" : fr.name[fi];
      let prefix = "";
      if (bs && node !== 0) {
        const change = 100 * bs.delta[node];
        prefix = (change >= 0 ? "+" : "−") + Math.abs(change).toFixed(1) + " ";
      }
      if (hit) prefix = "● " + prefix;
      const room = Math.floor((wd - 6) / charW);
      if (room >= 3) {
        let text = prefix + label;
        if (text.length > room) text = text.slice(0, room - 2) + "..";
        ctx.fillStyle = "#000";
        ctx.fillText(text, x + 3, y + rowH / 2);
      }
      ctx.globalAlpha = 1;
      layout.push({ node, x, w: wd, y, d });
    };
    for (let i = anc.length - 1; i >= 1; i--) drawBox(anc[i], 0, width, tree.depth[anc[i]], true);
    for (let k = 0; k < bNode.length; k++) {
      if (tree.depth[bNode[k]] <= deep) drawBox(bNode[k], bX[k], bW[k], tree.depth[bNode[k]], false);
    }
    r.layout = layout;
    r.layoutRow = rowH;
    // The zoomed frame in view: in an icicle near the top of the box, in a
    // flame graph near its bottom (what is above it scrolls into view).
    const view = `${st.icicle}|${st.zoom.join(",")}|${r.cache.viewKey}`;
    if (r.flameView !== view) {
      r.flameView = view;
      const wrap = canvas.parentElement;
      const zy = yOf(tree.depth[zoom]);
      wrap.scrollTop = st.icicle ? Math.max(0, zy - 2 * rowH) : Math.max(0, zy + 3 * rowH - wrap.clientHeight);
    }
    // In differential mode colours say the change, not the module.
    if (bs) $("legend").innerHTML = "";
    else drawLegend(r);
    const legend = $("diff-legend");
    if (bs) {
      legend.hidden = false;
      legend.textContent = `Differential: red grew, blue shrank since ${r.data.baseLabel || "the base"} (labels give the change in points; full colour = ${(100 * maxAbs).toFixed(2)} points)` +
        (r.data.diff ? `. Noise: ${r.data.diff.noise}; changes within it (|Z| < ${r.data.diff.z}) are grey` +
          (dn ? "." : " in the Flat table (all threads, the report's metric, the whole run, not inverted).") : "");
    } else legend.hidden = true;
  }

  function drawLegend(r) {
    const fr = r.prof.frames;
    const { tree, w } = r.view();
    const weight = new Map();
    for (let i = 1; i < tree.n; i++) {
      const mod = fr.module[tree.frame[i]];
      if (!mod) continue;
      weight.set(mod, (weight.get(mod) || 0) + w.self[i]);
    }
    const mods = [...weight.entries()].filter((e) => e[1] > 0).sort((a, b) => b[1] - a[1]).slice(0, 12);
    const el = $("legend");
    el.innerHTML = "";
    for (const [mod] of mods) {
      const s = document.createElement("span");
      let fi = -1;
      for (let f = 0; f < fr.n && fi < 0; f++) if (fr.module[f] === mod && fr.kind[f] === 0) fi = f;
      s.style.setProperty("--sw", fi >= 0 ? frameColor(fr, fi) : `hsl(${hashHue(baseName(mod))},60%,72%)`);
      s.textContent = baseName(mod);
      s.title = mod;
      el.appendChild(s);
    }
  }

  function hitTest(r, x, y) {
    for (let i = r.layout.length - 1; i >= 0; i--) {
      const b = r.layout[i];
      if (x >= b.x && x < b.x + b.w && y >= b.y && y < b.y + r.layoutRow) return b;
    }
    return null;
  }

  function describe(r, node) {
    const { tree, w } = r.view();
    const fr = r.prof.frames;
    const metric = metricOf(r);
    const total = w.total[0];
    if (node === 0) return `all\n${fmtValue(total, metric)}`;
    const fi = tree.frame[node];
    const where = fr.file[fi] ? `${fr.file[fi]}${fr.line[fi] ? ":" + fr.line[fi] : ""}` : "source unknown";
    let s = `${fr.name[fi]}\nmodule: ${fr.module[fi] || "none"}\n` +
      `total: ${fmtValue(w.total[node], metric)} (${pct(w.total[node], total)}), self: ${fmtValue(w.self[node], metric)} (${pct(w.self[node], total)})\n${where}`;
    const bs = r.baseShares();
    if (bs) {
      const d = 100 * bs.delta[node];
      s += `\nbase: ${(100 * bs.node[node]).toFixed(2)}%  new: ${(100 * (bs.node[node] + bs.delta[node])).toFixed(2)}%  change: ${d >= 0 ? "+" : ""}${d.toFixed(2)} points` +
        (bs.node[node] ? "" : " (not in the base)");
      const dn = r.diffNodes();
      if (dn && dn.known[node]) s += `\nZ: ${dn.z[node] >= 0 ? "+" : "−"}${isFinite(dn.z[node]) ? Math.abs(dn.z[node]).toFixed(1) : "inf"} (${dn.beyond[node] ? "beyond" : "within"} noise)`;
    }
    return s;
  }

  // -- timeline --

  // Per thread, the samples of the metric's event in each column of the
  // timeline, and (@fi >= 0) those whose stack holds function @fi.
  function timelineCounts(r, cols, dur, src, fi) {
    const key = `${cols}|${dur}|${src ? src.event : -1}|${fi}`;
    if (r.cache.tlKey === key) return r.cache.tlCounts;
    const res = r.prof.threads.map((th) => {
      if (!th.trace) return null;
      const tr = th.trace;
      const count = new Float64Array(cols);
      const hot = fi >= 0 ? new Float64Array(cols) : null;
      let has = null;
      if (hot) {
        has = new Uint8Array(th.n);
        for (let k = 1; k < th.n; k++) has[k] = has[th.parent[k]] || th.frame[k] === fi ? 1 : 0;
      }
      let max = 0;
      const scale = cols / dur;
      for (let k = 0; k < tr.n; k++) {
        const code = tr.code ? tr.code[k] : tr.code1;
        if (src && code >> 1 !== src.event) continue;
        const c = Math.min(cols - 1, Math.floor(tr.time[k] * scale));
        count[c]++;
        if (has && has[tr.node[k]]) hot[c]++;
      }
      for (let c = 0; c < cols; c++) if (count[c] > max) max = count[c];
      return { count, hot, max };
    });
    r.cache.tlKey = key;
    r.cache.tlCounts = res;
    r.cache.tlRowCounts = new Map();
    return res;
  }

  // The counts of a timeline row: its thread's, or its threads' summed
  // (a process, the folded processes), made once per set of counts.
  function rowCounts(r, counts, row, cols) {
    if (row.threads.length === 1) return counts[row.threads[0]];
    const key = row.kind === "more" ? `more|${r.cache.groupsKey}` : `p${row.p.id}`;
    const cache = r.cache.tlRowCounts;
    const known = cache.get(key);
    if (known) return known;
    const count = new Float64Array(cols);
    let hot = null;
    for (const ti of row.threads) {
      const t = counts[ti];
      if (!t) continue;
      for (let c = 0; c < cols; c++) count[c] += t.count[c];
      if (t.hot) {
        if (!hot) hot = new Float64Array(cols);
        for (let c = 0; c < cols; c++) hot[c] += t.hot[c];
      }
    }
    let max = 0;
    for (let c = 0; c < cols; c++) if (count[c] > max) max = count[c];
    const res = { count, hot, max };
    cache.set(key, res);
    return res;
  }

  // Colours as the little-endian RGBA words of ImageData.
  const rgba = (rr, g, b) => (0xff << 24) | (b << 16) | (g << 8) | rr;
  const TL_BACK = rgba(0xf0, 0xf1, 0xf4);
  const TL_BACK_GROUP = rgba(0xe2, 0xe5, 0xec);
  const TL_BAR = [rgba(0x7a, 0xa2, 0xd6), rgba(0xc4, 0xd3, 0xe8)];
  const TL_HOT = [rgba(0xb3, 0x26, 0x1e), rgba(0xe0, 0xa8, 0xa4)];

  // The label of a timeline row, without its twisty.
  function rowLabel(r, row) {
    if (row.kind === "more") return `${row.procs.length} more processes`;
    if (row.kind === "proc") return `${row.p.comm} ${row.p.pid} · ${row.p.threads.length} threads`;
    const th = r.prof.threads[row.ti];
    return `${th.comm} ${th.tid}`;
  }

  // What a row is, for its tooltip.
  function rowTitle(r, row) {
    const g = r.groups();
    const metric = metricOf(r);
    let w = 0;
    for (const ti of row.threads) w += g.weight[ti];
    const amount = `${fmtValue(w, metric)} (${pct(w, g.total)})`;
    if (row.kind === "more") {
      return `${row.procs.length} processes, each under ${100 * FOLD_LIGHT}% of ${metric.name} and alive under ${100 * FOLD_SHORT}% of the run: ${amount} together.  Click to ${row.open ? "close" : "list"} them.`;
    }
    const p = row.p;
    const life = p.last >= p.first ? `, ${fmtTime(p.first)} – ${fmtTime(p.last)}` : "";
    if (row.kind === "proc") return `${p.comm} (pid ${p.pid}): ${p.threads.length} threads, ${amount}${life}.  Click to ${row.open ? "close" : "open"} it.`;
    const th = r.prof.threads[row.ti];
    return `${th.comm} (pid ${th.pid}, tid ${th.tid}${row.single ? "" : ", of " + p.comm}): ${amount}`;
  }

  // Text cut with "…" to @room pixels.
  function fitText(ctx, text, room) {
    if (ctx.measureText(text).width <= room) return text;
    let lo = 0;
    let hi = text.length;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (ctx.measureText(text.slice(0, mid) + "…").width <= room) lo = mid; else hi = mid - 1;
    }
    return lo ? text.slice(0, lo) + "…" : "";
  }

  // One track per row (Report.rows(): processes, their threads when open,
  // the folded ones as one): how many samples each column of time holds
  // (bars), those in the selected function darker.  Only the rows in view
  // are drawn: the canvas stays at the top of its box (sticky), the box
  // scrolls over the height of every row, and each scroll draws again.
  // Bars are written as pixels, in one putImageData, since tens of tracks
  // of a thousand columns are too many rectangles for a click's time.
  function drawTimeline(r) {
    const box = $("timeline-scroll");
    const canvas = $("timeline");
    const rowH = ROW();
    const rows = r.rows();
    const threads = r.prof.threads;
    const width = box.clientWidth;
    const labelW = Math.min(280, Math.max(140, width * 0.2));
    const fullH = rowH * (rows.length + 1);
    const maxH = parseFloat(getComputedStyle(box).maxHeight) || fullH;
    // Whole rows in the box, the axis on top.
    const height = Math.min(fullH, Math.max(2, Math.floor(maxH / rowH)) * rowH);
    $("timeline-rest").style.height = (fullH - height) + "px";
    box.style.height = height + "px";
    const dpr = window.devicePixelRatio || 1;
    const W = Math.round(width * dpr);
    const H = Math.round(height * dpr);
    if (canvas.width !== W || canvas.height !== H) {
      canvas.width = W;
      canvas.height = H;
    }
    canvas.style.height = height + "px";
    const ctx = canvas.getContext("2d");
    // Not laid out (hidden, or no room): nothing to draw.
    if (!W || !H) return;
    const scroll = Math.max(0, Math.min(box.scrollTop, fullH - height));
    let dur = r.duration;
    for (const th of threads) if (th.trace && th.trace.n) dur = Math.max(dur, th.trace.time[th.trace.n - 1]);
    dur = dur || 1;
    r.tl = { labelW, width, rowH, dur, scroll, height, rows: rows.length };
    const plotW = width - labelW - 4;
    const sel = new Set(r.state.threads);
    const src = metricSource(r.data, r.state.metric);
    // Columns of a few samples each at least, so that a steady thread draws as a steady band.
    let most = 0;
    for (const th of threads) if (th.trace && th.trace.n > most) most = th.trace.n;
    const cols = Math.max(1, Math.min(Math.floor(plotW), Math.ceil(most / 4)));
    const tc0 = performance.now();
    const counts = timelineCounts(r, cols, dur, src, r.state.selected);
    timings.tlCounts = performance.now() - tc0;
    if (r.cache.tlImgKey !== `${W}x${H}`) {
      r.cache.tlImg = ctx.createImageData(W, H);
      r.cache.tlImgKey = `${W}x${H}`;
    }
    const img = r.cache.tlImg;
    const px = new Uint32Array(img.data.buffer);
    px.fill(0);
    // Below the axis row, which stays on top.
    const clipTop = Math.round(rowH * dpr);
    // Plain loops: a bar is a pixel or two wide, too narrow for fill()'s call to pay.
    const fill = (x0, x1, y0, y1, color) => {
      for (let y = Math.max(y0, clipTop); y < Math.min(y1, H); y++) {
        const at = y * W;
        for (let x = x0; x < x1; x++) px[at + x] = color;
      }
    };
    const colW = plotW / cols;
    const px0 = Math.round(labelW * dpr);
    const px1 = Math.round((labelW + plotW) * dpr);
    const first = Math.floor(scroll / rowH);
    const last = Math.min(rows.length, Math.ceil((scroll + height) / rowH));
    const on = (row) => row.threads.some((ti) => sel.has(ti));
    for (let i = first; i < last; i++) {
      const row = rows[i];
      const y = rowH * (i + 1) - scroll;
      const top = Math.round((y + 1) * dpr);
      const bottom = Math.round((y + rowH - 1) * dpr);
      const dim = on(row) ? 0 : 1;
      fill(px0, px1, top, bottom, row.kind === "thread" ? TL_BACK : TL_BACK_GROUP);
      const cnt = rowCounts(r, counts, row, cols);
      if (!cnt || !cnt.max) continue;
      for (let c = 0; c < cols; c++) {
        if (!cnt.count[c]) continue;
        const x0 = Math.round((labelW + c * colW) * dpr);
        const x1 = Math.max(x0 + 1, Math.round((labelW + (c + 1) * colW) * dpr));
        const h = Math.max(2 * dpr, (bottom - top) * cnt.count[c] / cnt.max);
        fill(x0, x1, Math.round(bottom - h), bottom, TL_BAR[dim]);
        if (cnt.hot && cnt.hot[c]) {
          const h2 = Math.max(1, (bottom - top) * cnt.hot[c] / cnt.max);
          fill(x0, x1, Math.round(bottom - h2), bottom, TL_HOT[dim]);
        }
      }
    }
    timings.tlPixels = performance.now() - tc0 - timings.tlCounts;
    ctx.putImageData(img, 0, 0);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const fontPx = Math.round(rowH * 0.7);
    const font = `${fontPx}px system-ui, "DejaVu Sans", sans-serif`;
    ctx.textBaseline = "middle";
    ctx.save();
    ctx.beginPath();
    ctx.rect(0, rowH, width, height - rowH);
    ctx.clip();
    for (let i = first; i < last; i++) {
      const row = rows[i];
      const y = rowH * (i + 1) - scroll + rowH / 2;
      const indent = 2 + row.depth * fontPx;
      const group = row.kind !== "thread";
      ctx.font = group ? `600 ${font}` : font;
      ctx.fillStyle = on(row) ? "#222" : "#999";
      if (group) ctx.fillText(row.open ? "▾" : "▸", indent, y);
      const at = indent + fontPx;
      ctx.fillText(fitText(ctx, rowLabel(r, row), labelW - at - 4), at, y);
    }
    ctx.restore();
    ctx.font = font;
    ctx.fillStyle = "#555";
    ctx.fillText(`0 s … ${fmtTime(dur)}` + (r.state.selected >= 0 ? `   (dark: samples in ${r.prof.frames.name[r.state.selected]})` : ""), labelW, rowH / 2);
    if (r.state.range) {
      const [a, b2] = r.state.range;
      const xa = labelW + a / dur * plotW;
      const xb = labelW + b2 / dur * plotW;
      ctx.fillStyle = "#1652c733";
      ctx.fillRect(xa, 0, Math.max(1, xb - xa), height);
      ctx.strokeStyle = "#1652c7";
      ctx.strokeRect(xa, 0, Math.max(1, xb - xa), height);
    }
  }

  // The row of the timeline at @y pixels from the canvas's top, or null (the axis).
  function timelineRowAt(r, y) {
    if (!r.tl || y < r.tl.rowH) return null;
    const i = Math.floor((y + r.tl.scroll) / r.tl.rowH) - 1;
    const rows = r.rows();
    return i >= 0 && i < rows.length ? rows[i] : null;
  }

  // Opens or closes a process ("more": the folded processes) in the timeline and the thread list.
  function toggleGroup(r, id) {
    const st = r.state;
    if (id === "more") st.moreOpen = !st.moreOpen;
    else if (st.open.has(+id)) st.open.delete(+id);
    else st.open.add(+id);
    st.rowsV++;
    renderRows(r);
  }

  // What shows the rows: the timeline, the thread list, the Process
  // selector, the Threads tab, the counts in the bar.
  function renderRows(r) {
    drawTimeline(r);
    renderThreadList(r);
    fillProcessSelect(r);
    if (r.state.tab === "threads") renderThreads(r);
    updateBar(r);
  }

  // -- the selectors --

  // The Process selector: every process but the folded ones, in the
  // timeline's order, then the folded ones as one choice; with a filter,
  // the processes it matches.
  function fillProcessSelect(r) {
    const ps = $("process");
    const st = r.state;
    const g = r.groups();
    const rows = r.rows();
    let procs;
    if (rows.matching) procs = [...new Set(rows.filter((x) => x.p).map((x) => x.p))];
    else procs = (st.order === "created" ? g.procs : g.busy).filter((p) => !p.folded);
    const opt = (v, text) => `<option value="${v}">${esc(text)}</option>`;
    const share = (v) => (g.total ? ` — ${(100 * v / g.total).toFixed(1)}%` : "");
    const name = (p) => `${p.comm} ${p.pid}${p.threads.length > 1 ? ` (${p.threads.length} threads)` : ""}${share(p.weight)}`;
    const cap = 500;
    const html = [opt("", `all (${g.procs.length} process${g.procs.length === 1 ? "" : "es"})`)];
    for (const p of procs.slice(0, cap)) html.push(opt(p.id, name(p)));
    if (procs.length > cap) html.push(`<option disabled>… ${procs.length - cap} more: narrow the filter</option>`);
    if (!rows.matching && g.nfolded) {
      let w = 0;
      for (const p of g.procs) if (p.folded) w += p.weight;
      html.push(opt("more", `${g.nfolded} more processes (short, light)${share(w)}`));
    }
    const cur = st.process;
    if (cur === "some") html.push(opt("some", "some threads (see the thread list)"));
    else if (cur !== "" && cur !== "more" && !procs.slice(0, cap).some((p) => String(p.id) === cur)) html.push(opt(cur, name(g.procs[+cur])));
    ps.innerHTML = html.join("");
    ps.value = cur;
  }

  // The Process selector's choice that the selected threads are.
  function processChoice(r) {
    const st = r.state;
    const g = r.groups();
    const sel = st.threads;
    if (sel.length === r.prof.threads.length) return "";
    const same = (ts) => ts.length === sel.length && ts.every((ti) => sel.includes(ti));
    const p = sel.length ? g.procs.find((x) => x.pid === r.prof.threads[sel[0]].pid && same(x.threads)) : null;
    if (p) return String(p.id);
    if (g.nfolded && same(g.procs.filter((x) => x.folded).flatMap((x) => x.threads))) return "more";
    return "some";
  }

  // The thread selector: the timeline's rows as boxes to tick (a
  // process's box, or the folded processes' one, stands for all of their
  // threads), with the same filter, order and open processes.
  function renderThreadList(r) {
    const list = $("threads-list");
    const st = r.state;
    const rows = r.rows();
    const g = r.groups();
    const sel = new Set(st.threads);
    const threads = r.prof.threads;
    const m = rows.matching;
    const share = (v) => (g.total ? `${(100 * v / g.total).toFixed(1)}%` : "");
    const html = [];
    const allOn = m ? m.length > 0 && m.length === sel.size && m.every((ti) => sel.has(ti)) : sel.size === threads.length;
    const allText = m ? `only the ${m.length} matching thread${m.length === 1 ? "" : "s"}` : `all threads (${threads.length})`;
    html.push(`<div class="row"><span class="twisty-btn"></span><label><input type="checkbox" data-all="1"${allOn ? " checked" : ""}> <strong>${allText}</strong></label></div>`);
    const cap = 2000;
    for (const row of rows.slice(0, cap)) {
      let n = 0;
      let w = 0;
      for (const ti of row.threads) { if (sel.has(ti)) n++; w += g.weight[ti]; }
      const box = (attr) => `<input type="checkbox" ${attr}${n === row.threads.length ? " checked" : ""}${n && n < row.threads.length ? ' data-some="1"' : ""}>`;
      const pad = `style="padding-left:${(row.depth * 1.2).toFixed(1)}rem"`;
      if (row.kind === "thread") {
        const th = threads[row.ti];
        html.push(`<div class="row" ${pad}><span class="twisty-btn"></span><label>${box(`data-thread="${row.ti}"`)} ${esc(th.comm)} (pid ${th.pid}, tid ${th.tid})</label><span class="share">${share(w)}</span></div>`);
        continue;
      }
      const id = row.kind === "proc" ? row.p.id : "more";
      const label = row.kind === "proc" ? `${esc(row.p.comm)} (pid ${row.p.pid}) · ${row.p.threads.length} threads` : `${row.procs.length} more processes (short, light)`;
      const twisty = m ? '<span class="twisty-btn"></span>' :
        `<button type="button" class="twisty-btn" data-toggle="${id}" aria-expanded="${row.open}" aria-label="${row.open ? "Close" : "Open"}">${row.open ? "▾" : "▸"}</button>`;
      html.push(`<div class="row" ${pad}>${twisty}<label>${box(`data-group="${id}"`)} ${label}</label><span class="share">${share(w)}</span></div>`);
    }
    if (rows.length > cap) html.push(`<p class="note">${rows.length - cap} more rows: narrow the filter</p>`);
    list.innerHTML = html.join("");
    for (const b of list.querySelectorAll("input[data-some]")) b.indeterminate = true;
    placeThreadList();
  }

  // The thread list opens below its summary, moved left as far as it must to stay in the window.
  function placeThreadList() {
    if (!$("threads-box").open) return;
    const pop = $("threads-pop");
    pop.style.left = "0px";
    const at = $("threads-box").getBoundingClientRect().left;
    pop.style.left = Math.max(-at, Math.min(0, document.documentElement.clientWidth - 8 - at - pop.offsetWidth)) + "px";
  }

  // -- tables --

  function renderTab(r) {
    const tab = r.state.tab;
    for (const b of document.querySelectorAll("#tabs button")) b.setAttribute("aria-selected", String(b.dataset.tab === tab));
    for (const p of document.querySelectorAll(".panel")) p.hidden = p.id !== "panel-" + tab;
    if (tab === "tree") renderTree(r);
    else if (tab === "sandwich") renderSandwich(r);
    else if (tab === "flat") renderFlat(r);
    else if (tab === "source") renderSource(r);
    else if (tab === "disasm") renderDisasm(r);
    else if (tab === "threads") renderThreads(r);
  }

  function fnCell(r, fi) {
    const fr = r.prof.frames;
    return `<td class="fn" title="${esc(fr.name[fi])}">${esc(fr.name[fi])}</td><td class="mod" title="${esc(fr.module[fi])}">${esc(baseName(fr.module[fi] || ""))}</td>`;
  }

  function sortHeaders(table, key) {
    for (const th of table.querySelectorAll("th[data-sort]")) {
      if (th.dataset.sort === key) th.setAttribute("aria-sort", key === "name" || key === "module" ? "ascending" : "descending");
      else th.removeAttribute("aria-sort");
    }
  }

  function visibleTreeRows(r) {
    const { tree, w } = r.view();
    const st = r.state;
    const key = st.sort.tree;
    const fr = r.prof.frames;
    const rows = [];
    const order = (kids) => {
      const a = Array.from(kids).filter((c) => w.total[c] > 0);
      if (key === "name") a.sort((x, y) => fr.rank[tree.frame[x]] - fr.rank[tree.frame[y]]);
      else if (key === "self") a.sort((x, y) => w.self[y] - w.self[x]);
      else a.sort((x, y) => w.total[y] - w.total[x]);
      return a;
    };
    const walk = (v, depth) => {
      for (const c of order(childrenOf(tree, v))) {
        const path = r.pathOf(tree, c).join(",");
        rows.push({ node: c, depth, path, open: st.expanded.has(path) });
        if (st.expanded.has(path) && rows.length < 5000) walk(c, depth + 1);
      }
    };
    walk(0, 0);
    return rows;
  }

  // The hottest path opened a few levels, so the tree shows something at once.
  function openHotPath(r) {
    const { tree, w } = r.view();
    let v = 0;
    for (let d = 0; d < 12; d++) {
      let best = -1;
      for (const c of childrenOf(tree, v)) if (best < 0 || w.total[c] > w.total[best]) best = c;
      if (best < 0) break;
      r.state.expanded.add(r.pathOf(tree, best).join(","));
      v = best;
    }
  }

  function renderTree(r) {
    const { tree, w } = r.view();
    const total = w.total[0];
    const metric = metricOf(r);
    const rows = visibleTreeRows(r);
    r.treeRows = rows;
    if (r.state.cursor === null && rows.length) r.state.cursor = rows[0].path;
    const body = $("tree").tBodies[0];
    const html = [];
    for (const row of rows) {
      const v = row.node;
      const fi = tree.frame[v];
      const hasKids = childrenOf(tree, v).length > 0;
      const cls = (row.path === r.state.cursor ? "sel" : "");
      const share = total ? w.total[v] / total : 0;
      html.push(`<tr class="${cls}" data-path="${row.path}" data-frame="${fi}" aria-level="${row.depth + 1}"${hasKids ? ` aria-expanded="${row.open}"` : ""}>` +
        `<td class="num" data-value="${w.total[v]}" title="${esc(fmtValue(w.total[v], metric))}">${pct(w.total[v], total)}</td>` +
        `<td class="num" data-value="${w.self[v]}" title="${esc(fmtValue(w.self[v], metric))}">${pct(w.self[v], total)}</td>` +
        `<td class="fn" style="padding-left:${0.5 + row.depth * 1.1}rem"><span class="twisty">${hasKids ? (row.open ? "▾" : "▸") : ""}</span><span class="bar" style="width:${(share * 4).toFixed(2)}rem"></span>${esc(r.prof.frames.name[fi])}</td>` +
        `<td class="mod">${esc(baseName(r.prof.frames.module[fi] || ""))}</td></tr>`);
    }
    body.innerHTML = html.join("");
    sortHeaders($("tree"), r.state.sort.tree);
  }

  function renderFlat(r) {
    const fl = r.flat();
    const total = r.weights().total[0];
    const fr = r.prof.frames;
    const metric = metricOf(r);
    const key = r.state.sort.flat;
    let re;
    try { re = r.state.flatFilter ? new RegExp(r.state.flatFilter) : null; } catch { re = null; }
    const idx = [];
    for (let f = 0; f < fr.n; f++) {
      if (!fl.total[f] || fr.kind[f] === 3) continue;
      if (re && !re.test(fr.name[f])) continue;
      idx.push(f);
    }
    if (key === "name") idx.sort((a, b) => fr.rank[a] - fr.rank[b]);
    else if (key === "module") idx.sort((a, b) => (fr.module[a] < fr.module[b] ? -1 : fr.module[a] > fr.module[b] ? 1 : fl.self[b] - fl.self[a]));
    else if (key === "total") idx.sort((a, b) => fl.total[b] - fl.total[a] || fl.self[b] - fl.self[a]);
    else idx.sort((a, b) => fl.self[b] - fl.self[a] || fl.total[b] - fl.total[a]);
    const bs = r.baseShares();
    const dr = bs ? r.diffRows() : null;
    const head = $("flat").tHead.rows[0];
    if (bs && head.cells.length === 5) {
      head.insertAdjacentHTML("beforeend", '<th class="num">Base total</th><th class="num">New total</th><th class="num">Change</th>' +
        '<th class="num" title="the change of the self share, in points (narwhal-report --diff)">Self change</th><th class="num" title="its standard error">SE</th><th class="num" title="the change over its standard error: beyond noise at |Z| &ge; 3">Z</th>');
    }
    const shown = idx.slice(0, 500);
    const html = [];
    for (const f of shown) {
      const where = fr.file[f] ? `${baseName(fr.file[f])}${fr.line[f] ? ":" + fr.line[f] : ""}` : "";
      let extra = "";
      if (bs) {
        const b = bs.byName.get(fr.name[f]) || { total: 0 };
        const n = total ? fl.total[f] / total : 0;
        const d = Math.round(10000 * (n - b.total)) / 100;
        extra = `<td class="num">${(100 * b.total).toFixed(2)}%</td><td class="num">${(100 * n).toFixed(2)}%</td><td class="num ${d > 0 ? "up" : d < 0 ? "down" : ""}">${d >= 0 ? "+" : "−"}${Math.abs(d).toFixed(2)}</td>`;
      }
      let noise = "";
      if (dr) {
        const c = dr.get(fr.name[f]);
        extra += c ? diffCells(c) : '<td class="num"></td><td class="num"></td><td class="num"></td>';
        if (!c || !c.beyond) noise = " noise";
      }
      html.push(`<tr data-frame="${f}" class="${f === r.state.selected ? "sel" : ""}${noise}">` +
        `<td class="num" data-value="${fl.self[f]}" title="${esc(fmtValue(fl.self[f], metric))}">${pct(fl.self[f], total)}</td>` +
        `<td class="num" data-value="${fl.total[f]}" title="${esc(fmtValue(fl.total[f], metric))}">${pct(fl.total[f], total)}</td>` +
        `${fnCell(r, f)}<td class="mod">${esc(where)}</td>${extra}</tr>`);
    }
    $("flat").tBodies[0].innerHTML = html.join("");
    $("flat-more").textContent = idx.length > shown.length ? `${idx.length - shown.length} more functions; filter to find them` : `${idx.length} functions`;
    sortHeaders($("flat"), key);
  }

  // A change of narwhal-report's diff: points, its standard error, its z.
  function diffCells(c) {
    const sign = (v, digits) => (v >= 0 ? "+" : "−") + (isFinite(v) ? Math.abs(v).toFixed(digits) : "inf");
    const cls = !c.beyond ? "" : c.delta > 0 ? "up" : "down";
    return `<td class="num ${cls}">${sign(c.delta, 1)}</td><td class="num">${c.se.toFixed(1)}</td><td class="num ${cls}">${sign(c.z, 1)}</td>`;
  }

  function renderSandwich(r) {
    const f = r.state.selected;
    const head = $("sandwich-head");
    const cb = $("callers").tBodies[0];
    const ce = $("callees").tBodies[0];
    if (f < 0) {
      head.textContent = "Select a function: click it in the flame graph or a table.";
      cb.innerHTML = ce.innerHTML = "";
      return;
    }
    const tree = r.merged();
    const w = r.weights();
    const fr = r.prof.frames;
    const total = w.total[0];
    const metric = metricOf(r);
    const callers = new Map();
    const callees = new Map();
    let ftotal = 0;
    let fself = 0;
    // Each outermost call of the function (a recursive one counts once).
    for (let j = 1; j < tree.n;) {
      const v = tree.pre[j];
      if (tree.frame[v] !== f) { j++; continue; }
      ftotal += w.total[v];
      const p = tree.parent[v];
      const pf = p > 0 ? tree.frame[p] : -1;
      callers.set(pf, (callers.get(pf) || 0) + w.total[v]);
      for (let k = tree.pos[v]; k < tree.end[v]; k++) {
        const u = tree.pre[k];
        if (tree.frame[u] === f) fself += w.self[u];
      }
      for (const c of childrenOf(tree, v)) callees.set(tree.frame[c], (callees.get(tree.frame[c]) || 0) + w.total[c]);
      j = tree.end[v];
    }
    head.innerHTML = `<strong class="fn">${esc(fr.name[f])}</strong> — total <span id="sandwich-total">${pct(ftotal, total)}</span> (${esc(fmtValue(ftotal, metric))}), self <span id="sandwich-self">${pct(fself, total)}</span> (${esc(fmtValue(fself, metric))}); module ${esc(fr.module[f] || "none")}`;
    const rows = (map) => [...map.entries()].sort((a, b) => b[1] - a[1]).map(([g, v]) =>
      `<tr data-frame="${g}"><td class="num" data-value="${v}">${pct(v, total)}</td><td class="num">${pct(v, ftotal)}</td>` +
      (g >= 0 ? fnCell(r, g) : '<td class="fn">[root]</td><td></td>') + "</tr>").join("");
    cb.innerHTML = rows(callers);
    ce.innerHTML = rows(callees);
  }

  function renderSource(r) {
    const f = r.state.selected;
    const head = $("source-head");
    const body = $("source").tBodies[0];
    if (f < 0) {
      head.textContent = "Select a function to see its source lines.";
      body.innerHTML = "";
      return;
    }
    const fr = r.prof.frames;
    const w = r.weights();
    const total = w.total[0];
    const metric = metricOf(r);
    const self = new Map();
    const tot = new Map();
    // Per line: self where the function is the leaf; total once per stack.
    for (const ti of r.state.threads) {
      const th = r.prof.threads[ti];
      const s = w.perThread.get(ti);
      const inc = Float64Array.from(s);
      for (let i = th.n - 1; i > 0; i--) inc[th.parent[i]] += inc[i];
      for (let i = 1; i < th.n; i++) {
        if (th.frame[i] !== f) continue;
        const ln = th.line[i];
        if (s[i]) self.set(ln, (self.get(ln) || 0) + s[i]);
        let nested = false;
        for (let u = th.parent[i]; u > 0; u = th.parent[u]) if (th.frame[u] === f && th.line[u] === ln) { nested = true; break; }
        if (!nested && inc[i]) tot.set(ln, (tot.get(ln) || 0) + inc[i]);
      }
    }
    const file = fr.file[f];
    const text = file ? r.sources.get(file) : null;
    head.innerHTML = `<strong class="fn">${esc(fr.name[f])}</strong> — ${esc(file || "no source file known")}` +
      (file && !text ? " (its text is not in this report: not readable when it was written, or over the size cap)" : "");
    const lines = [...new Set([...self.keys(), ...tot.keys()])].sort((a, b) => a - b);
    const html = [];
    const row = (ln, hot) => {
      const sv = self.get(ln) || 0;
      const tv = tot.get(ln) || 0;
      const src = text && ln > 0 && ln <= text.length ? text[ln - 1] : "";
      return `<tr class="${hot ? "hot" : ""}" data-line="${ln}"><td class="num" data-value="${sv}" title="${esc(fmtValue(sv, metric))}">${sv ? pct(sv, total) : ""}</td>` +
        `<td class="num" data-value="${tv}" title="${esc(fmtValue(tv, metric))}">${tv ? pct(tv, total) : ""}</td><td class="num">${ln || "?"}</td><td class="src">${esc(src)}</td></tr>`;
    };
    if (text && lines.length) {
      // The sampled lines with two lines of context around each.
      const want = new Set();
      for (const ln of lines) for (let k = ln - 2; k <= ln + 2; k++) if (k >= 1 && k <= text.length) want.add(k);
      const all = [...want].sort((a, b) => a - b);
      let prev = 0;
      for (const ln of all) {
        if (prev && ln > prev + 1) html.push('<tr class="gap"><td colspan="4">⋯</td></tr>');
        html.push(row(ln, self.has(ln) || tot.has(ln)));
        prev = ln;
      }
      if (lines.includes(0)) html.push(row(0, true));
    } else {
      for (const ln of lines) html.push(row(ln, true));
    }
    body.innerHTML = html.join("");
  }

  // The selected function's instructions as the report was written: the
  // shares are of the report's metric, threads and time (the thread and
  // range choices of the page do not re-weigh them: the trees hold no
  // addresses).  A line's instructions are marked (state.disasmLine, "file:line"
  // by the file's base name, also set from the Source panel); the filter
  // marks the instructions whose text it matches.
  function renderDisasm(r) {
    const f = r.state.selected;
    const st = r.state;
    const head = $("disasm-head");
    const body = $("disasm").tBodies[0];
    const count = $("disasm-count");
    count.textContent = "";
    if (f < 0) {
      head.textContent = "Select a function to see its instructions.";
      body.innerHTML = "";
      return;
    }
    const fr = r.prof.frames;
    const d = r.disasm.get(fr.name[f]);
    if (!d) {
      const why = !r.data.disasm ? "the measurement holds no machine code (recorded with --no-code?)"
        : r.data.disasmLeft ? `not stored when recording, or left out of this page (${r.data.disasmLeft} function(s) over its size cap)`
          : "not stored when recording, or only inlined into other functions";
      head.innerHTML = `<strong class="fn">${esc(fr.name[f])}</strong> — no instructions: ${esc(why)}`;
      body.innerHTML = "";
      return;
    }
    const whole = r.data.disasmWhole || 0;
    const metric = r.metrics[r.data.metric || 0];
    const mod = baseName(r.strings[d.module] || "");
    let re;
    try { re = st.disasmFilter ? new RegExp(st.disasmFilter) : null; } catch { re = null; }
    head.innerHTML = `<strong class="fn">${esc(fr.name[f])}</strong> in ${esc(mod)} — self <span id="disasm-self">${pct(d.self, whole)}</span>, total <span id="disasm-total">${pct(d.total, whole)}</span> of ${esc(metric ? metric.name : "samples")}` +
      ' <span class="hint">(the threads and time the report was written for)</span>';
    const html = [];
    let n = 0;
    let matched = 0;
    const share = (v) => (v ? pct(v, whole) : "");
    for (const p of d.parts) {
      const at = p.start === null ? "" : `+0x${p.start}`;
      const what = p.status ? `not stored: ${p.status}`
        : p.stored < p.size ? `the first ${p.stored} of ${p.size} bytes stored (the recorder's per-function cap)`
          : `${p.size} bytes, stored whole`;
      html.push(`<tr class="gap"><td colspan="5">${esc(mod + at)} — ${esc(what)}${p.machine ? ` (${esc(p.machine)})` : ""}</td></tr>`);
      const top = Math.max(1, ...p.self);
      let lastInl = -1;
      for (let i = 0; i < p.off.length; i++) {
        const file = p.file[i] >= 0 ? r.strings[p.file[i]] : "";
        const key = p.line[i] ? `${baseName(file)}:${p.line[i]}` : "";
        if (p.inl[i] !== lastInl) {
          html.push(`<tr class="inl"><td colspan="5">${p.inl[i] >= 0 ? "inlined: " + esc(r.strings[p.inl[i]]) : esc(fr.name[f])}</td></tr>`);
          lastInl = p.inl[i];
        }
        const hit = re && re.test(p.text[i]);
        n++;
        if (hit) matched++;
        const addr = (BigInt("0x" + p.start) + BigInt(p.off[i])).toString(16);
        const heat = p.self[i] ? ` style="background: rgba(228, 87, 46, ${(0.1 + 0.6 * p.self[i] / top).toFixed(2)})"` : "";
        const cls = [key && key === st.disasmLine ? "hl" : "", hit ? "match" : ""].filter(Boolean).join(" ");
        html.push(`<tr data-key="${esc(key)}" data-addr="${addr}"${cls ? ` class="${cls}"` : ""}>` +
          `<td class="num" data-value="${p.self[i]}"${heat} title="${esc(fmtValue(p.self[i], metric))}">${share(p.self[i])}</td>` +
          `<td class="num" data-value="${p.total[i]}" title="${esc(fmtValue(p.total[i], metric))}">${share(p.total[i])}</td>` +
          `<td class="fn">${p.mark[i] & 1 ? "&gt;" : ""}${esc(mod)}+0x${addr}${p.mark[i] & 2 ? " ?" : ""}</td>` +
          `<td class="asm">${esc(p.text[i])}</td>` +
          `<td class="loc">${esc(key)}${p.inl[i] >= 0 ? ` [${esc(r.strings[p.inl[i]])}]` : ""}</td></tr>`);
      }
      for (const [a, s, t] of p.rows) {
        html.push(`<tr data-addr="${a}"><td class="num">${share(s)}</td><td class="num">${share(t)}</td>` +
          `<td class="fn">${esc(mod)}+0x${a}</td><td colspan="2" class="hint">${p.off.length ? "past the stored bytes" : "no instruction stored"}</td></tr>`);
      }
    }
    body.innerHTML = html.join("");
    if (re) count.textContent = `${matched} of ${n} instructions match`;
  }

  // Every thread (those the filter matches), heaviest first; a click shows one alone.
  function renderThreads(r) {
    const metric = metricOf(r);
    const src = metricSource(r.data, r.state.metric);
    const g = r.groups();
    const matching = r.rows().matching;
    let total = 0;
    let rows = r.prof.threads.map((th) => {
      let v = g.weight[th.index];
      if (r.state.range) {
        const s = threadSelf(th, r.state.metric, r.state.range, src);
        v = 0;
        for (let i = 0; i < th.n; i++) v += s[i];
      }
      total += v;
      return { th, v };
    });
    if (matching) rows = matching.map((ti) => rows[ti]);
    rows.sort((a, b) => b.v - a.v);
    const cap = 500;
    const sel = new Set(r.state.threads);
    const procName = (th) => r.prof.procNames.get(th.pid) ?? "";
    $("threads").tBodies[0].innerHTML = rows.slice(0, cap).map(({ th, v }) =>
      `<tr data-thread="${th.index}" class="${sel.has(th.index) ? "" : "off"}"><td class="num">${pct(v, total)}</td><td class="num" data-value="${v}">${esc(fmtValue(v, metric))}</td><td class="num">${th.pid}</td><td class="num">${th.tid}</td><td>${esc(th.comm)}</td><td>${esc(procName(th))}</td></tr>`).join("") +
      (rows.length > cap ? `<tr class="gap"><td colspan="6">${rows.length - cap} more threads: filter them (the timeline's filter box)</td></tr>` : "");
  }

  // The processes open at first: the busiest of several threads, while
  // every row fits the timeline's box (the folded processes' row too).
  function openDefault(r) {
    const g = r.groups();
    const box = $("timeline-scroll");
    const fit = Math.max(4, Math.floor((parseFloat(getComputedStyle(box).maxHeight) || 0) / ROW()) - 1);
    let n = g.busy.filter((p) => !p.folded).length + (g.nfolded ? 1 : 0);
    for (const p of g.busy) {
      if (p.folded || p.threads.length < 2 || n + p.threads.length > fit) continue;
      r.state.open.add(p.id);
      n += p.threads.length;
    }
    r.state.rowsV++;
  }

  // ---- controls ----

  function selectFunction(r, fi) {
    r.state.selected = fi;
  }

  function zoomTo(r, node) {
    const { tree } = r.view();
    r.state.zoom = r.pathOf(tree, node);
    if (node > 0) selectFunction(r, tree.frame[node]);
  }

  function timed(name, fn) {
    const t0 = performance.now();
    fn();
    timings[name] = performance.now() - t0;
  }

  function setupControls(r) {
    const st = r.state;
    const ms = $("metric");
    r.metrics.forEach((m, i) => {
      const o = document.createElement("option");
      o.value = String(i);
      o.textContent = m.name;
      ms.appendChild(o);
    });
    ms.value = String(st.metric);
    ms.addEventListener("change", () => timed("metric", () => { st.metric = +ms.value; syncThreadBoxes(r); render(r); }));

    const ps = $("process");
    ps.addEventListener("change", () => timed("process", () => {
      const v = ps.value;
      const g = r.groups();
      if (v === "some") return;
      if (v === "") st.threads = r.prof.threads.map((t) => t.index);
      else if (v === "more") st.threads = g.procs.filter((p) => p.folded).flatMap((p) => p.threads).sort((a, b) => a - b);
      else st.threads = g.procs[+v].threads.slice().sort((a, b) => a - b);
      st.process = v;
      syncThreadBoxes(r);
      render(r);
    }));

    const list = $("threads-list");
    list.addEventListener("change", (e) => timed("threads", () => {
      const box = e.target;
      const rows = r.rows();
      const all = r.prof.threads.map((t) => t.index);
      if (box.dataset.all) {
        if (rows.matching) st.threads = box.checked && rows.matching.length ? rows.matching.slice() : all;
        else st.threads = box.checked ? all : [];
      } else {
        let ts;
        if (box.dataset.thread !== undefined) ts = [+box.dataset.thread];
        else if (box.dataset.group === "more") ts = rows.find((x) => x.kind === "more").threads;
        else ts = r.groups().procs[+box.dataset.group].threads;
        const set = new Set(st.threads);
        for (const ti of ts) if (box.checked) set.add(ti); else set.delete(ti);
        st.threads = [...set].sort((a, b) => a - b);
      }
      st.process = processChoice(r);
      syncThreadBoxes(r);
      render(r);
    }));
    list.addEventListener("click", (e) => {
      const b = e.target.closest("button[data-toggle]");
      if (b) timed("toggle", () => toggleGroup(r, b.dataset.toggle));
    });
    $("threads-box").addEventListener("toggle", placeThreadList);

    // One filter for the timeline and the selectors, typed in either box.
    const filters = [$("tl-filter"), $("threads-filter")];
    for (const f of filters) {
      f.addEventListener("input", () => timed("filter", () => {
        st.filter = f.value;
        for (const o of filters) if (o !== f) o.value = f.value;
        $("timeline-scroll").scrollTop = 0;
        renderRows(r);
      }));
    }
    $("tl-only").addEventListener("click", () => timed("threads", () => {
      const m = r.rows().matching;
      if (!m || !m.length) return;
      st.threads = m.slice();
      st.process = processChoice(r);
      syncThreadBoxes(r);
      render(r);
    }));
    $("tl-created").addEventListener("change", (e) => timed("order", () => {
      st.order = e.target.checked ? "created" : "busy";
      renderRows(r);
    }));

    const search = $("search");
    search.addEventListener("input", () => timed("search", () => { st.search = search.value; render(r, { flame: true }); }));

    $("reset-zoom").addEventListener("click", () => timed("reset", () => { st.zoom = []; render(r, { flame: true }); }));
    $("icicle").addEventListener("change", (e) => timed("icicle", () => { st.icicle = e.target.checked; render(r, { flame: true }); }));
    $("inverted").addEventListener("change", (e) => timed("invert", () => { st.inverted = e.target.checked; st.zoom = []; st.expanded.clear(); st.cursor = null; openHotPath(r); render(r, { flame: true }); }));
    $("range-clear").addEventListener("click", () => timed("range", () => { st.range = null; render(r); }));

    const canvas = $("flame");
    const tip = $("tooltip");
    canvas.addEventListener("mousemove", (e) => {
      const rect = canvas.getBoundingClientRect();
      const b = hitTest(r, e.clientX - rect.left, e.clientY - rect.top);
      if (!b) { tip.hidden = true; $("details").textContent = "\u00a0"; return; }
      const text = describe(r, b.node);
      tip.textContent = text;
      tip.hidden = false;
      // Fixed to the window: the graph scrolls in its box, the tip stays by the pointer.
      const x = Math.min(e.clientX + 12, window.innerWidth - tip.offsetWidth - 4);
      tip.style.left = Math.max(0, x) + "px";
      let y = e.clientY + 16;
      if (y + tip.offsetHeight > window.innerHeight) y = Math.max(0, e.clientY - tip.offsetHeight - 8);
      tip.style.top = y + "px";
      $("details").textContent = text.split("\n").slice(0, 3).join(" | ");
    });
    canvas.addEventListener("mouseleave", () => { tip.hidden = true; });
    canvas.addEventListener("click", (e) => timed("click", () => {
      const rect = canvas.getBoundingClientRect();
      const b = hitTest(r, e.clientX - rect.left, e.clientY - rect.top);
      if (!b) return;
      zoomTo(r, b.node);
      render(r, { flame: true, later: true });
    }));

    for (const b of document.querySelectorAll("#tabs button")) {
      b.addEventListener("click", () => timed("tab", () => { st.tab = b.dataset.tab; renderTab(r); }));
    }

    // Tables: a row selects its function; a tree row's twisty opens it.
    $("tree").addEventListener("click", (e) => timed("tree", () => {
      const th = e.target.closest("th[data-sort]");
      if (th) { st.sort.tree = th.dataset.sort; renderTree(r); return; }
      const tr = e.target.closest("tr[data-path]");
      if (!tr) return;
      st.cursor = tr.dataset.path;
      if (e.target.closest(".twisty") || tr.getAttribute("aria-expanded") !== null) toggle(r, tr.dataset.path);
      selectFunction(r, +tr.dataset.frame);
      render(r, { flame: true, later: true });
    }));
    $("tree").addEventListener("keydown", (e) => treeKey(r, e));
    const pick = (e) => {
      const tr = e.target.closest("tr[data-frame]");
      if (!tr || +tr.dataset.frame < 0) return;
      timed("select", () => { selectFunction(r, +tr.dataset.frame); render(r, { flame: true, later: true }); });
    };
    $("flat").addEventListener("click", (e) => {
      const th = e.target.closest("th[data-sort]");
      if (th) { st.sort.flat = th.dataset.sort; renderFlat(r); return; }
      pick(e);
    });
    $("callers").addEventListener("click", pick);
    $("callees").addEventListener("click", pick);
    $("flat-filter").addEventListener("input", (e) => { st.flatFilter = e.target.value; renderFlat(r); });
    $("disasm-filter").addEventListener("input", (e) => { st.disasmFilter = e.target.value; renderDisasm(r); });
    // A line of the Disassembly panel marks its instructions; a line of the
    // Source panel does too, in the Disassembly panel.
    $("disasm").addEventListener("click", (e) => {
      const tr = e.target.closest("tr[data-key]");
      if (!tr || !tr.dataset.key) return;
      st.disasmLine = st.disasmLine === tr.dataset.key ? null : tr.dataset.key;
      renderDisasm(r);
    });
    $("source").addEventListener("click", (e) => {
      const tr = e.target.closest("tr[data-line]");
      const f = st.selected;
      if (!tr || f < 0 || !+tr.dataset.line) return;
      st.disasmLine = `${baseName(r.prof.frames.file[f] || "")}:${tr.dataset.line}`;
      st.tab = "disasm";
      renderTab(r);
    });
    $("threads").addEventListener("click", (e) => {
      const tr = e.target.closest("tr[data-thread]");
      if (!tr) return;
      st.threads = [+tr.dataset.thread];
      st.process = processChoice(r);
      syncThreadBoxes(r);
      render(r);
    });

    // Range selection on the timeline.
    const tl = $("timeline");
    let drag = null;
    const timeAt = (e) => {
      const rect = tl.getBoundingClientRect();
      const x = e.clientX - rect.left - r.tl.labelW;
      const plotW = r.tl.width - r.tl.labelW - 4;
      return Math.max(0, Math.min(r.tl.dur, x / plotW * r.tl.dur));
    };
    tl.addEventListener("mousedown", (e) => {
      e.preventDefault();
      const rect = tl.getBoundingClientRect();
      const row = timelineRowAt(r, e.clientY - rect.top);
      // A process's label opens or closes it; the tracks take a range.
      if (row && row.kind !== "thread" && e.clientX - rect.left < r.tl.labelW) {
        timed("toggle", () => toggleGroup(r, row.kind === "more" ? "more" : String(row.p.id)));
        return;
      }
      drag = timeAt(e);
    });
    tl.addEventListener("mousemove", (e) => {
      const rect = tl.getBoundingClientRect();
      const row = timelineRowAt(r, e.clientY - rect.top);
      tl.title = row ? rowTitle(r, row) : "";
      tl.style.cursor = row && row.kind !== "thread" && e.clientX - rect.left < r.tl.labelW ? "pointer" : "";
    });
    let tlPending = false;
    $("timeline-scroll").addEventListener("scroll", () => {
      if (tlPending) return;
      tlPending = true;
      requestAnimationFrame(() => { tlPending = false; drawTimeline(r); });
    });
    window.addEventListener("mouseup", (e) => {
      if (drag === null) return;
      const t = timeAt(e);
      const a = Math.min(drag, t);
      const b = Math.max(drag, t);
      drag = null;
      timed("range", () => {
        // Whole microseconds, the traces' unit: a range means the same to --time.
        st.range = b - a > r.tl.dur / 1000 ? [Math.round(a), Math.round(b)] : null;
        render(r);
      });
    });

    document.addEventListener("keydown", (e) => {
      const typing = e.target.matches && e.target.matches("input, select, textarea");
      if (e.key === "/" && !typing) { e.preventDefault(); search.focus(); search.select(); }
      else if (e.key === "Escape") {
        if (typing) e.target.blur();
        timed("reset", () => { st.zoom = []; render(r, { flame: true }); });
      }
    });
    window.addEventListener("resize", () => { render(r); placeThreadList(); });
    // The flame graph's width also changes when a scroll bar comes or goes
    // (the page grew or shrank after a zoom): draw it again at the new width.
    let flameWidth = $("flame-wrap").clientWidth;
    new ResizeObserver(() => {
      const w = $("flame-wrap").clientWidth;
      if (w !== flameWidth) { flameWidth = w; render(r, { flame: true }); }
    }).observe($("flame-wrap"));
  }

  function syncThreadBoxes(r) {
    renderThreadList(r);
    fillProcessSelect(r);
    r.state.zoom = r.state.zoom.slice();
  }

  function toggle(r, path) {
    const ex = r.state.expanded;
    if (ex.has(path)) ex.delete(path); else ex.add(path);
  }

  function treeKey(r, e) {
    const rows = r.treeRows || [];
    let i = rows.findIndex((x) => x.path === r.state.cursor);
    if (i < 0) i = 0;
    const row = rows[i];
    if (!row) return;
    const ex = r.state.expanded;
    if (e.key === "ArrowDown") i = Math.min(rows.length - 1, i + 1);
    else if (e.key === "ArrowUp") i = Math.max(0, i - 1);
    else if (e.key === "ArrowRight") { if (!ex.has(row.path)) ex.add(row.path); else i = Math.min(rows.length - 1, i + 1); }
    else if (e.key === "ArrowLeft") {
      if (ex.has(row.path)) ex.delete(row.path);
      else { const up = row.path.split(",").slice(0, -1).join(","); const k = rows.findIndex((x) => x.path === up); if (k >= 0) i = k; }
    } else if (e.key === "Enter") { zoomTo(r, rows[i].node); }
    else return;
    e.preventDefault();
    timed("key", () => {
      const cur = r.treeRows.length ? visibleTreeRows(r) : rows;
      const next = (e.key === "ArrowRight" || e.key === "ArrowLeft") ? rows[i] : cur[i] || rows[i];
      r.state.cursor = next ? next.path : null;
      if (next) selectFunction(r, r.view().tree.frame[next.node]);
      render(r, { flame: true });
      const sel = $("tree").querySelector("tr.sel");
      if (sel && sel.scrollIntoView) sel.scrollIntoView({ block: "nearest" });
    });
  }

  // ---- start ----

  async function start() {
    let data;
    try {
      data = await loadData();
    } catch (e) {
      setStatus("This report could not be read: " + e, true);
      throw e;
    }
    timings.decoded = performance.now() - timings.start;
    const r = new Report(data);
    window.narwhal.report = r;
    const title = data.title + (data.label ? ` (${data.label})` : "");
    $("title").textContent = title;
    $("title").title = title;
    document.title = "Narwhal: " + title;
    setupControls(r);
    openDefault(r);
    syncThreadBoxes(r);
    openHotPath(r);
    render(r);
    const th = r.prof.threads.length;
    const traced = r.prof.threads.some((t) => t.trace);
    setStatus(`${th} thread${th === 1 ? "" : "s"}, ${r.prof.frames.n} functions` +
      (r.duration ? `, ${fmtTime(r.duration)}` : "") +
      (traced ? "" : " — no traces: the timeline and time ranges are not available") +
      (r.base ? ` — differential: compared with ${data.baseLabel}` : "") +
      (data.sourcesLeft ? ` — ${data.sourcesLeft} source file(s) not embedded` : ""));
    if (!traced) $("timeline-box").hidden = true;
    timings.ready = performance.now() - timings.start;
    // From the start of the navigation: what a person waits for.
    timings.readyAt = performance.now();
    // And when the frame that shows it is drawn.
    requestAnimationFrame(() => setTimeout(() => { timings.shownAt = performance.now(); }, 0));
    document.body.dataset.ready = "1";
  }

  window.narwhal = { timings, report: null };
  start();
})();
