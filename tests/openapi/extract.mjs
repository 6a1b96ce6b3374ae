#!/usr/bin/env node
// Extracts the response schemas of the GitHub REST operations klaud uses from GitHub's official
// OpenAPI description (npm package `@octokit/openapi`) into `github-subset.json`, which
// `tests/fake_github_openapi.rs` validates the fake GitHub's answers against.
//
// Regenerate (the package is large; install it outside the repository):
//
//   npm install --prefix /tmp/openapi @octokit/openapi
//   node tests/openapi/extract.mjs \
//     /tmp/openapi/node_modules/@octokit/openapi/generated/api.github.com.json
//
// The dereferenced variant (`api.github.com.deref.json`) works too, but the referenced one gives a
// much smaller subset: shared schemas are kept once under `components.schemas`.
//
// What the subset holds, per operation (`"METHOD /path/template"`): the `application/json`
// schema of every 2xx, 3xx and 4xx response (`null` for a response without a body, such as the
// redirect to a job's log). The schemas are
// converted from OpenAPI 3.0 to JSON Schema 2020-12 (`nullable: true` becomes a union with
// `null`; `oneOf` becomes `anyOf`, see `convert`) and stripped of documentation (`description`,
// `example`, `title`, `x-*`, …). Only the `components.schemas` entries reachable from these
// responses are kept.
//
// No dependencies: plain Node.js (18 or newer).

import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const REPO = "/repos/{owner}/{repo}";

/** The operations klaud calls, as `[method, path template]`. */
const OPERATIONS = [
  ["GET", REPO],
  ["GET", `${REPO}/pulls`],
  ["GET", `${REPO}/pulls/{pull_number}`],
  ["PATCH", `${REPO}/pulls/{pull_number}`],
  ["GET", `${REPO}/pulls/{pull_number}/commits`],
  ["GET", `${REPO}/pulls/{pull_number}/files`],
  ["GET", `${REPO}/issues`],
  ["POST", `${REPO}/issues`],
  ["GET", `${REPO}/issues/{issue_number}`],
  ["PATCH", `${REPO}/issues/{issue_number}`],
  ["POST", `${REPO}/issues/{issue_number}/labels`],
  ["DELETE", `${REPO}/issues/{issue_number}/labels/{name}`],
  ["GET", `${REPO}/issues/{issue_number}/comments`],
  ["POST", `${REPO}/issues/{issue_number}/comments`],
  ["PATCH", `${REPO}/issues/comments/{comment_id}`],
  ["GET", `${REPO}/git/ref/{ref}`],
  ["GET", `${REPO}/git/matching-refs/{ref}`],
  ["POST", `${REPO}/git/refs`],
  ["PATCH", `${REPO}/git/refs/{ref}`],
  ["DELETE", `${REPO}/git/refs/{ref}`],
  ["POST", `${REPO}/git/trees`],
  ["GET", `${REPO}/git/trees/{tree_sha}`],
  ["POST", `${REPO}/git/commits`],
  ["GET", `${REPO}/contents/{path}`],
  ["PUT", `${REPO}/contents/{path}`],
  ["GET", `${REPO}/collaborators/{username}/permission`],
  ["GET", `${REPO}/actions/workflows/{workflow_id}/runs`],
  ["GET", `${REPO}/actions/runs`],
  ["GET", `${REPO}/actions/runs/{run_id}`],
  ["GET", `${REPO}/actions/runs/{run_id}/jobs`],
  ["POST", `${REPO}/actions/runs/{run_id}/cancel`],
  ["GET", `${REPO}/actions/jobs/{job_id}/logs`],
  ["POST", `${REPO}/actions/workflows/{workflow_id}/dispatches`],
];

/** JSON Schema keywords kept; everything else at schema level is documentation or OpenAPI-only. */
const KEPT_KEYWORDS = new Set([
  "type",
  "format",
  "enum",
  "required",
  "additionalProperties",
  "maxLength",
  "minLength",
  "minimum",
  "maximum",
  "maxItems",
  "minItems",
  "uniqueItems",
  "maxProperties",
  "pattern",
]);
/** Dropped silently; anything else unknown is reported. */
const DROPPED_KEYWORDS = new Set([
  "description",
  "example",
  "examples",
  "title",
  "default",
  "readOnly",
  "writeOnly",
  "deprecated",
  "discriminator",
  "externalDocs",
  "xml",
]);

const SCHEMA_REF = "#/components/schemas/";
const RESPONSE_REF = "#/components/responses/";

function fail(message) {
  console.error(`extract.mjs: ${message}`);
  process.exit(1);
}

/** The package version: `package.json` of `@octokit/openapi` above the description, else `info.version`. */
function packageVersion(descriptionPath, description) {
  let directory = path.dirname(path.resolve(descriptionPath));
  for (;;) {
    const candidate = path.join(directory, "package.json");
    if (fs.existsSync(candidate)) {
      const manifest = JSON.parse(fs.readFileSync(candidate, "utf8"));
      if (manifest.name === "@octokit/openapi") return manifest.version;
    }
    const parent = path.dirname(directory);
    if (parent === directory) return description.info?.version ?? "unknown";
    directory = parent;
  }
}

/**
 * Converts one OpenAPI 3.0 schema object to JSON Schema 2020-12, collecting the names of the
 * component schemas it refers to in `referenced`.
 */
function convert(schema, referenced, unknown) {
  if (schema === true || schema === false) return schema;
  if (schema === null || typeof schema !== "object" || Array.isArray(schema)) {
    fail(`not a schema: ${JSON.stringify(schema)}`);
  }
  if ("oneOf" in schema && "anyOf" in schema) fail("a schema with both oneOf and anyOf");
  const out = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "$ref") {
      if (!value.startsWith(SCHEMA_REF)) fail(`unsupported $ref ${value}`);
      referenced.add(value.slice(SCHEMA_REF.length));
      out.$ref = value;
    } else if (key === "properties") {
      out.properties = Object.fromEntries(
        Object.entries(value).map(([name, property]) => [
          name,
          convert(property, referenced, unknown),
        ]),
      );
    } else if (key === "items" || key === "not") {
      out[key] = convert(value, referenced, unknown);
    } else if (key === "allOf" || key === "anyOf") {
      out[key] = value.map((part) => convert(part, referenced, unknown));
    } else if (key === "oneOf") {
      // GitHub writes `oneOf` for alternatives that overlap (`basic-error` and
      // `repository-rule-violation-error`, `private-user` and `public-user`): a real answer
      // matches several of them, so "exactly one" would reject it. "At least one" is meant.
      out.anyOf = value.map((part) => convert(part, referenced, unknown));
    } else if (key === "additionalProperties") {
      out[key] =
        typeof value === "object" ? convert(value, referenced, unknown) : value;
    } else if (KEPT_KEYWORDS.has(key)) {
      out[key] = value;
    } else if (key !== "nullable" && !DROPPED_KEYWORDS.has(key) && !key.startsWith("x-")) {
      unknown.add(key);
    }
  }
  if (schema.nullable !== true) return out;
  // OpenAPI 3.0 `nullable: true` → JSON Schema: the value may also be null.
  const composite = "$ref" in out || "allOf" in out || "anyOf" in out;
  if (composite || !("type" in out)) {
    if (!composite && Object.keys(out).length === 0) return out;
    return { anyOf: [{ type: "null" }, out] };
  }
  out.type = Array.isArray(out.type) ? [...new Set([...out.type, "null"])] : [out.type, "null"];
  if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
  return out;
}

function main() {
  const [descriptionPath, outputArg] = process.argv.slice(2);
  if (!descriptionPath) {
    fail("usage: node tests/openapi/extract.mjs <api.github.com.json> [output.json]");
  }
  const here = path.dirname(fileURLToPath(import.meta.url));
  const output = outputArg ?? path.join(here, "github-subset.json");
  const description = JSON.parse(fs.readFileSync(descriptionPath, "utf8"));
  const components = description.components ?? {};
  const referenced = new Set();
  const unknown = new Set();

  const operations = {};
  for (const [method, template] of OPERATIONS) {
    const operation = description.paths?.[template]?.[method.toLowerCase()];
    if (!operation) fail(`${method} ${template} is not in the description`);
    const responses = {};
    for (const [status, declared] of Object.entries(operation.responses ?? {})) {
      if (!/^[234]\d\d$/.test(status)) continue;
      let response = declared;
      if (response.$ref) {
        if (!response.$ref.startsWith(RESPONSE_REF)) fail(`unsupported $ref ${response.$ref}`);
        response = components.responses?.[response.$ref.slice(RESPONSE_REF.length)];
        if (!response) fail(`dangling ${declared.$ref}`);
      }
      const schema = response.content?.["application/json"]?.schema;
      responses[status] = schema ? convert(schema, referenced, unknown) : null;
    }
    operations[`${method} ${template}`] = {
      operationId: operation.operationId,
      responses,
    };
  }

  // Reachable component schemas, converted (their own references join the queue).
  const schemas = {};
  const queue = [...referenced];
  while (queue.length > 0) {
    const name = queue.pop();
    if (name in schemas) continue;
    const source = components.schemas?.[name];
    if (!source) fail(`dangling ${SCHEMA_REF}${name}`);
    const found = new Set();
    schemas[name] = convert(source, found, unknown);
    queue.push(...[...found].filter((next) => !(next in schemas)));
  }
  if (unknown.size > 0) {
    fail(`schema keywords this script does not handle: ${[...unknown].join(", ")}`);
  }

  const subset = {
    $comment:
      "Generated by tests/openapi/extract.mjs from GitHub's OpenAPI description; do not edit.",
    source: {
      package: "@octokit/openapi",
      version: packageVersion(descriptionPath, description),
      file: path.basename(descriptionPath),
      openapi: description.openapi,
    },
    operations,
    components: {
      schemas: Object.fromEntries(
        Object.keys(schemas)
          .sort()
          .map((name) => [name, schemas[name]]),
      ),
    },
  };
  fs.writeFileSync(output, `${JSON.stringify(subset, null, 1)}\n`);
  const size = fs.statSync(output).size;
  console.log(
    `wrote ${output}: ${OPERATIONS.length} operations, ` +
      `${Object.keys(schemas).length} schemas, ${size} bytes ` +
      `(@octokit/openapi ${subset.source.version})`,
  );
}

main();
