#!/bin/bash
# The JavaScript of the project through ESLint (tests/js/eslint.config.mjs):
# the HTML report's page (web/report.js, compiled into narwhal-report), the
# node checks of tests/js and bench/html-timing.mjs.  ESLint comes from tests/js/package.json
# (npm ci there, as scripts/setup.sh --tests does); missing, the test fails.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=export-lib.sh
. "$(dirname "$0")/export-lib.sh"

nw_need_tool node
eslint=$NW_JS/node_modules/.bin/eslint
[[ -x $eslint ]] || fail "ESLint is missing: run scripts/setup.sh --tests (npm ci in tests/js)"

check "eslint web/ tests/js/ bench/"
(cd "$NW_SRC" && "$eslint" -c tests/js/eslint.config.mjs --max-warnings 0 web tests/js bench) \
	>"$NW_TMP/eslint.out" 2>&1 || {
	nw_show "eslint" "$NW_TMP/eslint.out"
	fail "ESLint finds problems in the project's JavaScript"
}
ok "$(find "$NW_SRC/web" "$NW_JS" "$NW_SRC/bench" -maxdepth 1 \( -name '*.js' -o -name '*.mjs' \) | wc -l) files clean"

check "ESLint fails on a problem (the check can fail)"
printf '(function () {\n  "use strict";\n  const unused = 1;\n})();\n' >"$NW_TMP/bad.js"
# Through stdin, named as a file of web/ (ESLint lints nothing outside the tree).
if (cd "$NW_SRC" && "$eslint" -c tests/js/eslint.config.mjs --stdin --stdin-filename web/bad.js \
	<"$NW_TMP/bad.js") >"$NW_TMP/bad.out" 2>&1; then
	fail "ESLint accepted an unused variable"
fi
grep -q no-unused-vars "$NW_TMP/bad.out" || fail "ESLint failed for another reason: $(cat "$NW_TMP/bad.out")"
ok "an unused variable is reported"

pass
