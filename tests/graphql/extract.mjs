#!/usr/bin/env node
// Extracts the part of GitHub's GraphQL schema that klaud's queries and mutations reach from the
// npm package `@octokit/graphql-schema` (its introspection result, `schema.json`) into
// `github-subset.graphql`. `tests/fake_github_graphql.rs` validates every query klaud sends
// against that subset and checks the fake GitHub's answers against it; the fake GitHub
// (`tests/fake_github/`) serves the same subset as its own schema.
//
// Regenerate (install the package outside the repository):
//
//   npm install --prefix /tmp/graphql-schema @octokit/graphql-schema
//   node tests/graphql/extract.mjs \
//     /tmp/graphql-schema/node_modules/@octokit/graphql-schema/schema.json
//
// What the subset holds:
// - for each object and interface type of `FIELDS`, only the fields listed there, each with all
//   of its arguments (types and default values as GitHub declares them);
// - every enum, input object and custom scalar those fields and arguments reach, whole (input
//   objects' fields followed);
// - of a union, the members that are in the subset; of an interface, the implementations that
//   are; an implementation also keeps the fields the subset keeps of its interfaces.
// Object or interface types reached but missing from `FIELDS` are an error: add them.
// Descriptions and directives are left out.
//
// No dependencies: plain Node.js (18 or newer).

import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** Object and interface types klaud's queries reach, with the fields kept of each. */
const FIELDS = {
  Query: ["repository", "viewer"],
  Mutation: ["convertPullRequestToDraft", "markPullRequestReadyForReview", "updateRefs"],
  Repository: ["id", "issue", "issues", "nameWithOwner", "object", "pullRequest", "pullRequests"],
  Issue: [
    "author",
    "body",
    "createdAt",
    "labels",
    "locked",
    "number",
    "timelineItems",
    "title",
    "url",
    "userContentEdits",
  ],
  IssueConnection: ["nodes", "pageInfo", "totalCount"],
  IssueTimelineItemsConnection: ["nodes", "pageInfo", "totalCount"],
  LabeledEvent: ["actor", "createdAt", "label"],
  UnlabeledEvent: ["actor", "createdAt", "label"],
  UserContentEditConnection: ["nodes", "pageInfo", "totalCount"],
  UserContentEdit: ["diff", "editedAt", "editor"],
  PageInfo: ["endCursor", "hasNextPage", "hasPreviousPage", "startCursor"],
  PullRequestConnection: ["nodes", "totalCount"],
  PullRequest: [
    "author",
    "baseRefName",
    "baseRefOid",
    "closedAt",
    "commits",
    "createdAt",
    "headRefName",
    "headRefOid",
    "headRepository",
    "id",
    "isCrossRepository",
    "isDraft",
    "labels",
    "mergeStateStatus",
    "mergeable",
    "merged",
    "mergedAt",
    "number",
    "state",
    "statusCheckRollup",
    "timelineItems",
    "title",
    "updatedAt",
  ],
  Actor: ["login"],
  User: ["databaseId", "login"],
  Bot: ["login"],
  LabelConnection: ["nodes", "totalCount"],
  Label: ["name"],
  PullRequestTimelineItemsConnection: ["nodes", "totalCount"],
  ClosedEvent: ["actor", "createdAt"],
  PullRequestCommitConnection: ["nodes", "totalCount"],
  PullRequestCommit: ["commit"],
  GitObject: ["oid"],
  Commit: ["author", "committer", "message", "oid"],
  GitActor: ["user"],
  StatusCheckRollup: ["contexts"],
  StatusCheckRollupContextConnection: ["nodes", "pageInfo", "totalCount"],
  CheckRun: ["checkSuite", "conclusion", "detailsUrl", "name", "status"],
  StatusContext: ["context", "state", "targetUrl"],
  CheckSuite: ["conclusion", "status", "workflowRun"],
  WorkflowRun: ["file", "url"],
  WorkflowRunFile: ["path"],
  ConvertPullRequestToDraftPayload: ["clientMutationId", "pullRequest"],
  MarkPullRequestReadyForReviewPayload: ["clientMutationId", "pullRequest"],
  UpdateRefsPayload: ["clientMutationId"],
};

const BUILT_IN_SCALARS = new Set(["String", "Int", "Float", "Boolean", "ID"]);

function fail(message) {
  console.error(`extract.mjs: ${message}`);
  process.exit(1);
}

/** The package version from `package.json` of `@octokit/graphql-schema` above the schema. */
function packageVersion(schemaPath) {
  let directory = path.dirname(path.resolve(schemaPath));
  for (;;) {
    const candidate = path.join(directory, "package.json");
    if (fs.existsSync(candidate)) {
      const manifest = JSON.parse(fs.readFileSync(candidate, "utf8"));
      if (manifest.name === "@octokit/graphql-schema") return manifest.version;
    }
    const parent = path.dirname(directory);
    if (parent === directory) fail("no package.json of @octokit/graphql-schema above the schema");
    directory = parent;
  }
}

/** A type reference as SDL writes it (`[String!]!`). */
function typeText(ref) {
  switch (ref.kind) {
    case "NON_NULL":
      return `${typeText(ref.ofType)}!`;
    case "LIST":
      return `[${typeText(ref.ofType)}]`;
    default:
      return ref.name;
  }
}

function namedType(ref) {
  return ref.ofType ? namedType(ref.ofType) : ref.name;
}

function main() {
  const schemaPath = process.argv[2];
  if (!schemaPath) fail("usage: node tests/graphql/extract.mjs path/to/schema.json");
  const introspection = JSON.parse(fs.readFileSync(schemaPath, "utf8")).__schema;
  const types = new Map(introspection.types.map((type) => [type.name, type]));
  const version = packageVersion(schemaPath);

  for (const [name, fields] of Object.entries(FIELDS)) {
    const type = types.get(name);
    if (!type) fail(`no type ${name}`);
    if (type.kind !== "OBJECT" && type.kind !== "INTERFACE") fail(`${name} is a ${type.kind}`);
    for (const field of fields) {
      if (!type.fields.some((candidate) => candidate.name === field)) {
        fail(`no field ${name}.${field}`);
      }
    }
  }

  // Which fields each composite type keeps: the listed ones, plus its interfaces' kept ones.
  const kept = new Map(Object.entries(FIELDS).map(([name, fields]) => [name, new Set(fields)]));
  for (const [name, fields] of kept) {
    for (const iface of types.get(name).interfaces ?? []) {
      for (const field of kept.get(iface.name) ?? []) fields.add(field);
    }
  }

  // Follow the kept fields, their arguments and input objects' fields to every reached type.
  const reached = new Set(["Query", "Mutation"]);
  const queue = ["Query", "Mutation"];
  const reach = (name) => {
    if (BUILT_IN_SCALARS.has(name) || reached.has(name)) return;
    reached.add(name);
    queue.push(name);
  };
  while (queue.length > 0) {
    const type = types.get(queue.shift());
    switch (type.kind) {
      case "OBJECT":
      case "INTERFACE": {
        if (!kept.has(type.name)) fail(`${type.name} is reached: add it to FIELDS`);
        for (const field of type.fields.filter((field) => kept.get(type.name).has(field.name))) {
          reach(namedType(field.type));
          for (const argument of field.args) reach(namedType(argument.type));
        }
        if (type.kind === "INTERFACE") {
          const implementations = type.possibleTypes.filter((member) => kept.has(member.name));
          if (implementations.length === 0) fail(`no implementation of ${type.name} is in FIELDS`);
          for (const member of implementations) reach(member.name);
        }
        break;
      }
      case "UNION": {
        const members = type.possibleTypes.filter((member) => kept.has(member.name));
        if (members.length === 0) fail(`no member of union ${type.name} is in FIELDS`);
        for (const member of members) reach(member.name);
        break;
      }
      case "INPUT_OBJECT":
        for (const field of type.inputFields) reach(namedType(field.type));
        break;
      case "ENUM":
      case "SCALAR":
        break;
      default:
        fail(`unexpected kind ${type.kind} of ${type.name}`);
    }
  }
  for (const name of kept.keys()) {
    if (!reached.has(name)) fail(`${name} is in FIELDS but nothing reaches it`);
  }

  const argumentsText = (args) =>
    args.length === 0
      ? ""
      : `(${args
          .map(
            (argument) =>
              `${argument.name}: ${typeText(argument.type)}${
                argument.defaultValue === null ? "" : ` = ${argument.defaultValue}`
              }`,
          )
          .join(", ")})`;

  const order = ["Query", "Mutation", ...[...reached].filter((name) => name !== "Query" && name !== "Mutation").sort()];
  const blocks = [];
  for (const name of order) {
    const type = types.get(name);
    switch (type.kind) {
      case "OBJECT":
      case "INTERFACE": {
        const interfaces = (type.interfaces ?? [])
          .map((iface) => iface.name)
          .filter((iface) => reached.has(iface));
        const keyword = type.kind === "OBJECT" ? "type" : "interface";
        const implementsText = interfaces.length ? ` implements ${interfaces.join(" & ")}` : "";
        const fields = type.fields
          .filter((field) => kept.get(name).has(field.name))
          .map((field) => `  ${field.name}${argumentsText(field.args)}: ${typeText(field.type)}`);
        blocks.push(`${keyword} ${name}${implementsText} {\n${fields.join("\n")}\n}`);
        break;
      }
      case "UNION": {
        const members = type.possibleTypes
          .map((member) => member.name)
          .filter((member) => reached.has(member));
        blocks.push(`union ${name} = ${members.join(" | ")}`);
        break;
      }
      case "ENUM":
        blocks.push(`enum ${name} {\n${type.enumValues.map((value) => `  ${value.name}`).join("\n")}\n}`);
        break;
      case "INPUT_OBJECT": {
        const fields = type.inputFields.map(
          (field) =>
            `  ${field.name}: ${typeText(field.type)}${
              field.defaultValue === null ? "" : ` = ${field.defaultValue}`
            }`,
        );
        blocks.push(`input ${name} {\n${fields.join("\n")}\n}`);
        break;
      }
      case "SCALAR":
        blocks.push(`scalar ${name}`);
        break;
    }
  }

  const header = [
    `# GitHub's GraphQL schema, the part klaud's queries and mutations reach.`,
    `# Generated by tests/graphql/extract.mjs from @octokit/graphql-schema ${version}; do not edit.`,
    `# Object and interface types keep only the fields klaud uses; unions and interfaces only the`,
    `# members and implementations kept here. Arguments, enums, input objects: as GitHub has them.`,
  ].join("\n");
  const out = path.join(path.dirname(fileURLToPath(import.meta.url)), "github-subset.graphql");
  fs.writeFileSync(out, `${header}\n\n${blocks.join("\n\n")}\n`);
  console.log(`wrote ${out}: ${blocks.length} types from @octokit/graphql-schema ${version}`);
}

main();
