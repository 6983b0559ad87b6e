// SPDX-License-Identifier: MIT
//
// ESLint's flat config for the JavaScript of the project: the HTML report's
// page (web/report.js, a browser script with no modules, compiled into
// narwhal-report) and the node checks here.  Run by the "lint-web" test
// (tests/meson.build):  npx eslint -c tests/js/eslint.config.mjs web tests/js
import js from "@eslint/js";

const browser = {
  window: "readonly", document: "readonly", performance: "readonly", getComputedStyle: "readonly",
  atob: "readonly", Blob: "readonly", requestAnimationFrame: "readonly", setTimeout: "readonly", Response: "readonly", DecompressionStream: "readonly",
  ResizeObserver: "readonly",
  console: "readonly",
};
const node = { process: "readonly", console: "readonly", URL: "readonly" };

export default [
  { ignores: ["**/node_modules/**"] },
  js.configs.recommended,
  {
    rules: {
      "no-unused-vars": ["error", { args: "none", caughtErrors: "none" }],
      eqeqeq: ["error", "always"],
      "no-var": "error",
      "prefer-const": "error",
      "no-implicit-globals": "error",
      "no-shadow": "error",
      // In ESLint 10's recommended set, not yet in ESLint 9's (the version
      // pinned here, which runs on Debian 12's node 18): turned on by name.
      "no-unassigned-vars": "error",
      "no-useless-assignment": "error",
      "preserve-caught-error": "error",
    },
  },
  {
    files: ["**/web/**/*.js"],
    languageOptions: { sourceType: "script", ecmaVersion: 2022, globals: browser },
  },
  {
    files: ["**/*.mjs"],
    // Their page.evaluate() callbacks run in the browser.
    languageOptions: { sourceType: "module", ecmaVersion: 2022, globals: { ...node, ...browser } },
  },
];
