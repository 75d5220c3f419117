// A long-lived `tsc --noEmit --pretty false -p <config>`: one JSON request per stdin line, one JSON answer per
// stdout line. It runs in a box (grader/tsc_workers.py), one job at a time, with the job's files the only
// workspace files in it. What it keeps between jobs is the parsed and bound declaration files of the read-only
// node_modules set and of TypeScript's own lib (a DocumentRegistry): that is most of tsc's time. Every job's
// own files get a version of their own (nothing of one job is reused for the next), every job gets a new program
// and checker, and the diagnostics are tsc's, in tsc's order and format. A tsbuildinfo is never read.
"use strict";
const ts = require(process.argv[2]);
const readline = require("node:readline");

// What tsc itself parses JSDoc for (TypeScript >= 5.3; older ones have no such mode and ignore it).
const jsDocParsingMode = ts.JSDocParsingMode ? ts.JSDocParsingMode.ParseForTypeErrors : undefined;
const registry = ts.createDocumentRegistry(ts.sys.useCaseSensitiveFileNames, undefined, jsDocParsingMode);
let previous = null; // the last job's service: disposed once the next one holds the shared documents
let job = 0;

function format(diagnostics, cwd) {
  const host = { getCanonicalFileName: (f) => f, getCurrentDirectory: () => cwd, getNewLine: () => "\n" };
  return diagnostics.map((d) => ts.formatDiagnostic(d, host)).join("");
}

function check(request) {
  job += 1;
  const cwd = request.cwd;
  const shared = [request.shared].flat().filter(Boolean).map((p) => p.replace(/\/?$/, "/"));
  process.chdir(cwd);
  const unrecoverable = [];
  const parseHost = { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => unrecoverable.push(d) };
  const parsed = ts.getParsedCommandLineOfConfigFile(request.config, { noEmit: true, pretty: false }, parseHost);
  if (!parsed) return { output: format(unrecoverable, cwd), exitCode: 1 };
  const options = parsed.options;
  const version = (file) => (shared.some((root) => file.startsWith(root)) ? "shared" : `job-${job}`);
  const host = {
    getCompilationSettings: () => options,
    getScriptFileNames: () => parsed.fileNames,
    getProjectReferences: () => parsed.projectReferences,
    getScriptVersion: version,
    getScriptSnapshot: (file) => {
      const text = ts.sys.readFile(file);
      return text === undefined ? undefined : ts.ScriptSnapshot.fromString(text);
    },
    getCurrentDirectory: () => cwd,
    getDefaultLibFileName: (o) => ts.getDefaultLibFilePath(o),
    useCaseSensitiveFileNames: () => ts.sys.useCaseSensitiveFileNames,
    fileExists: ts.sys.fileExists,
    readFile: ts.sys.readFile,
    readDirectory: ts.sys.readDirectory,
    directoryExists: ts.sys.directoryExists,
    getDirectories: ts.sys.getDirectories,
    realpath: ts.sys.realpath,
    jsDocParsingMode,
  };
  const service = ts.createLanguageService(host, registry);
  const program = service.getProgram();
  if (previous) previous.dispose();
  previous = service;
  // tsc's emitFilesAndReportErrors under --noEmit, in its order: each group only when the ones before were clean.
  const configFile = options.configFile;
  const all = configFile ? [...configFile.parseDiagnostics, ...parsed.errors] : [...parsed.errors];
  const base = all.length;
  all.push(...program.getSyntacticDiagnostics());
  if (all.length === base) {
    all.push(...program.getOptionsDiagnostics());
    all.push(...program.getGlobalDiagnostics());
    if (all.length === base) all.push(...program.getSemanticDiagnostics());
    if (all.length === base && (options.declaration || options.composite)) {
      all.push(...program.getDeclarationDiagnostics());
    }
  }
  const sorted = ts.sortAndDeduplicateDiagnostics(all);
  const errors = sorted.filter((d) => d.category === ts.DiagnosticCategory.Error).length;
  return { output: format(sorted, cwd), exitCode: errors ? 2 : 0 };
}

const lines = readline.createInterface({ input: process.stdin });
process.stdout.write(JSON.stringify({ ready: true, typescript: ts.version }) + "\n");
lines.on("line", (line) => {
  let answer;
  try {
    answer = check(JSON.parse(line));
  } catch (err) {
    answer = { crashed: String((err && err.stack) || err).slice(0, 2000) };
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
});
