// SPDX-License-Identifier: MIT
//
// node speedscope-check.mjs FILE.json
//
// Validates a speedscope file written by narwhal-report --speedscope against
// the JSON schema that the speedscope package ships
// (dist/release/file-format-schema.json), with ajv, and checks what the
// schema cannot say: every sample has a weight, every frame index is in
// range, each profile's weights add up to endValue - startValue.  Prints the
// samples as folded stacks, "comm-tid;frame;...;frame WEIGHT" (the
// convention of narwhal-report --folded --per-thread), for the caller to
// compare.  Exits 1 with the reasons on stderr when the file is invalid.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const Ajv = require("ajv");
const schemaPath = require.resolve("speedscope/dist/release/file-format-schema.json");
const schema = JSON.parse(readFileSync(schemaPath, "utf8"));

const file = process.argv[2];
if (!file) {
  console.error("usage: node speedscope-check.mjs FILE.json");
  process.exit(2);
}
const data = JSON.parse(readFileSync(file, "utf8"));

const ajv = new Ajv({ allErrors: true, strict: false });
const validate = ajv.compile(schema);
const problems = [];
if (!validate(data)) {
  for (const e of validate.errors) problems.push(`schema: ${e.instancePath || "/"} ${e.message}`);
}

const frames = (data.shared && data.shared.frames) || [];
const lines = new Map();
(data.profiles || []).forEach((p, pi) => {
  if (p.type !== "sampled") {
    problems.push(`profile ${pi}: type ${p.type}, expected sampled`);
    return;
  }
  if (p.samples.length !== p.weights.length)
    problems.push(`profile ${pi}: ${p.samples.length} samples but ${p.weights.length} weights`);
  let sum = 0;
  p.weights.forEach((w) => (sum += w));
  if (sum !== p.endValue - p.startValue)
    problems.push(`profile ${pi}: weights add up to ${sum}, endValue - startValue is ${p.endValue - p.startValue}`);
  // "comm (pid P, tid T)" becomes the root frame "comm-T".
  const m = /^(.*) \(pid (\d+), tid (\d+)\)$/.exec(p.name);
  if (!m) {
    problems.push(`profile ${pi}: name ${JSON.stringify(p.name)} does not name the thread`);
    return;
  }
  const root = `${m[1].replace(/[ ;]/g, "_")}-${m[3]}`;
  p.samples.forEach((stack, si) => {
    const names = [root];
    for (const f of stack) {
      if (!Number.isInteger(f) || f < 0 || f >= frames.length) {
        problems.push(`profile ${pi} sample ${si}: frame index ${f} out of range`);
        return;
      }
      names.push(frames[f].name);
    }
    const key = names.join(";");
    lines.set(key, (lines.get(key) || 0) + p.weights[si]);
  });
});
if (data.profiles && data.profiles.length && !(data.activeProfileIndex < data.profiles.length))
  problems.push(`activeProfileIndex ${data.activeProfileIndex} is not a profile`);

if (problems.length) {
  for (const p of problems.slice(0, 20)) console.error(`${file}: ${p}`);
  process.exit(1);
}
for (const [k, v] of [...lines.entries()].sort()) console.log(`${k} ${v}`);
