'use strict';
// The native library: finding and loading it (through koffi, required on first load), its
// bound functions, and the call wrappers that decode and free what it returns and turn a
// failure status into an error.

const fs = require('node:fs');
const path = require('node:path');
const { ABI_VERSION } = require('./constants.cjs');
// The koffi declarations, generated from include/omprpc.h (`make generate`): the header's
// structs (defineStructs, registered before binding: the declarations name them), DECLS
// required, OPTIONAL_DECLS (later additions, same ABI version) bound when present.
const { defineStructs, DECLS, OPTIONAL_DECLS } = require('./native.gen.cjs');
const { STATUS_NAMES, errorFromDetails } = require('./errors.cjs');

/** The package's directory (this file is in its lib/). */
const PACKAGE_DIR = path.join(__dirname, '..');

let koffi = null;
let N = null; // the bound functions, once loaded
let structs = null; // the header's struct types (koffi.struct), by C name, once loaded
let loadedPath = null;

function libraryFileName() {
  if (process.platform === 'win32') return 'omprpc.dll';
  if (process.platform === 'darwin') return 'libomprpc.dylib';
  return 'libomprpc.so';
}

/** Where a package built by `make dist` carries its prebuilt library (one per platform). */
function prebuiltDir() {
  return path.join(PACKAGE_DIR, 'prebuilds', `${process.platform}-${process.arch}`);
}

/**
 * The name the system loader knows an installed library by, and where it looks for it (the
 * words of the "not found" error). Linux: the SONAME (`make install` links it to the versioned
 * file; only ELF platforms have one, build.rs). Windows: the DLL's own name, which LoadLibrary
 * looks for in the program's directory, the system directories and PATH.
 */
function byName() {
  if (process.platform === 'linux') return { name: `libomprpc.so.${ABI_VERSION}`, how: 'by soname, through ldconfig and LD_LIBRARY_PATH' };
  if (process.platform === 'win32') return { name: 'omprpc.dll', how: "by name, through the DLL search: the program's directory, System32, PATH" };
  return null;
}

/**
 * The cargo output directories of a checkout, under its target/: a Windows checkout builds into
 * target/{release,debug}, and a cross-build from Linux into the target triple's directory.
 */
function cargoDirs() {
  const dirs = ['release', 'debug'];
  if (process.platform === 'win32') dirs.push(path.join('x86_64-pc-windows-gnu', 'release'), path.join('x86_64-pc-windows-gnu', 'debug'));
  return dirs;
}

/**
 * Where `load()` looks, in order (see README): `{ path }` entries are loaded when the file
 * exists, a `{ byName }` entry is handed to the system loader, which searches for it.
 * Python searches the same places in the same order (bindings/python/omprpc/_ffi.py).
 */
function librarySearch() {
  const name = libraryFileName();
  if (process.env.OMPRPC_LIBRARY) return [{ path: path.resolve(process.env.OMPRPC_LIBRARY) }];
  const out = [{ path: path.join(prebuiltDir(), name) }];
  const system = byName();
  if (system) out.push({ byName: system.name });
  // The repository's cargo output: the most recently built first.
  const targets = [];
  if (process.env.CARGO_TARGET_DIR) targets.push(path.resolve(process.env.CARGO_TARGET_DIR));
  targets.push(path.resolve(PACKAGE_DIR, '..', '..', 'target'));
  for (const t of targets) {
    const builds = cargoDirs()
      .map((p) => path.join(t, p, name))
      .map((p) => ({ p, m: mtimeOf(p) }))
      .filter((x) => x.m !== null)
      .sort((a, b) => b.m - a.m);
    for (const b of builds) out.push({ path: b.p });
    if (builds.length === 0) for (const p of cargoDirs()) out.push({ path: path.join(t, p, name) });
  }
  return out;
}

/** The places `load()` tries, as strings (a name for the loader as itself). */
function libraryCandidates() {
  return librarySearch().map((c) => c.path || c.byName);
}

/** The first of `librarySearch()` that loads: `{ lib, file }`, or an error listing every place. */
function openFirst(search) {
  const tried = [];
  for (const c of search) {
    if (c.byName) {
      try {
        return { lib: koffi.load(c.byName), file: c.byName };
      } catch (e) {
        // The loader's own reason: absent, or present but unloadable (another architecture …).
        tried.push(`${c.byName} (${byName().how}: ${e.message})`);
        continue;
      }
    }
    if (mtimeOf(c.path) === null) {
      tried.push(c.path);
      continue;
    }
    try {
      return { lib: koffi.load(c.path), file: c.path };
    } catch (e) {
      throw new Error(`omprpc: cannot load ${c.path}: ${e.message}`);
    }
  }
  throw new Error(
    'omprpc: cannot find the omprpc shared library. Looked at, in order:\n  ' +
      tried.join('\n  ') +
      '\nFix: install the omprpc package built for this platform (it carries ' +
      `${path.join('prebuilds', `${process.platform}-${process.arch}`, libraryFileName())}), or install the library ` +
      (process.platform === 'win32'
        ? '(put omprpc.dll from the Windows release zip where the DLL search finds it)'
        : '(make install; its soname is then found)') +
      `, or set OMPRPC_LIBRARY to the path of ${libraryFileName()}.`,
  );
}

function mtimeOf(p) {
  try {
    return fs.statSync(p).mtimeMs;
  } catch {
    return null;
  }
}

/**
 * Loads the shared library (once) and checks its ABI version. `libraryPath` overrides the
 * search (env `OMPRPC_LIBRARY`, the package's `prebuilds/<platform>-<arch>/`, the system loader's
 * search by name (a soname, omprpc.dll), the repository's `target/`).
 * Returns the path that was loaded.
 */
function load(libraryPath) {
  if (N) {
    if (libraryPath && path.resolve(libraryPath) !== loadedPath) {
      throw new Error(`omprpc: the library is already loaded from ${loadedPath}; cannot load ${libraryPath} too`);
    }
    return loadedPath;
  }
  if (!koffi) koffi = require('koffi');
  const { lib, file } = openFirst(libraryPath ? [{ path: path.resolve(libraryPath) }] : librarySearch());
  const abi = lib.func(DECLS.abiVersion)();
  if (abi !== ABI_VERSION) {
    throw new Error(
      `omprpc: ABI mismatch: ${file} has ABI version ${abi}, this binding (omprpc for Node) needs ${ABI_VERSION}. ` +
        'Use a library and a binding from the same omprpc release.',
    );
  }
  // Once per process: koffi refuses a second type of the same name (and a load() that failed
  // below, e.g. on a missing required function, may be retried).
  if (!structs) structs = defineStructs(koffi);
  const fns = {};
  for (const [k, decl] of Object.entries(DECLS)) fns[k] = lib.func(decl);
  for (const [k, decl] of Object.entries(OPTIONAL_DECLS)) {
    try {
      fns[k] = lib.func(decl);
    } catch (e) {
      const name = /omprpc_\w+/.exec(decl)[0];
      // Only an absent symbol makes a stub; a declaration koffi cannot read is a bug.
      if (!/Cannot find function/.test(e.message)) throw new Error(`omprpc: cannot declare ${name}: ${e.message}`);
      fns[k] = () => {
        throw new Error(`omprpc: ${name} is not in ${file} (an older build of the library)`);
      };
    }
  }
  N = fns;
  loadedPath = file;
  return file;
}

function native() {
  if (!N) load();
  return N;
}

/** Decodes an omprpc-owned string and frees it. */
function take(ptr) {
  if (ptr === null || ptr === undefined || ptr === 0n || ptr === 0) return null;
  try {
    return koffi.decode.string(ptr);
  } finally {
    N.stringFree(ptr);
  }
}

function failure(st, errPtr) {
  const text = take(errPtr);
  let details = null;
  if (text) {
    try {
      details = JSON.parse(text);
    } catch {
      details = null;
    }
  }
  if (!details || typeof details !== 'object') {
    details = { code: STATUS_NAMES[st] || 'UNKNOWN', status: st, message: text || `omprpc call failed: ${STATUS_NAMES[st] || st}` };
  }
  return errorFromDetails(details, st);
}

/** A synchronous call with an out-string: the string, or throws. */
function callOut(fn, args) {
  const out = [null];
  const err = [null];
  const st = fn(...args, out, err);
  if (st !== 0) throw failure(st, err[0]);
  return take(out[0]);
}

/** A synchronous call without an out-parameter: undefined, or throws. */
function callNoOut(fn, args) {
  const err = [null];
  const st = fn(...args, err);
  if (st !== 0) throw failure(st, err[0]);
}

/**
 * An async call on libuv's pool. Resolves `{st, out, err}` with the raw pointers; the
 * caller takes (decodes + frees) them.
 */
function callAsyncRaw(fn, args, hasOut) {
  return new Promise((resolve, reject) => {
    const out = [null];
    const err = [null];
    const cb = (e, st) => {
      if (e) reject(e);
      else resolve({ st, out: out[0], err: err[0] });
    };
    if (hasOut) fn.async(...args, out, err, cb);
    else fn.async(...args, err, cb);
  });
}

function settle(r) {
  if (r.st !== 0) {
    take(r.out);
    throw failure(r.st, r.err);
  }
  take(r.err);
  return r.out === undefined ? undefined : take(r.out);
}

function callEventFd(h) {
  const fd = [0];
  callNoOut(native().eventFd, [h, fd]);
  return fd[0];
}

/** The client's event HANDLE (Windows; a BigInt): see Client.eventHandle(). */
function callEventHandle(h) {
  const handle = [null];
  callNoOut(native().eventHandle, [h, handle]);
  return handle[0];
}

function callOutRaw(fn, args) {
  const out = [null];
  const err = [null];
  const st = fn(...args, out, err);
  return { st, out: out[0], err: err[0] };
}

/** The koffi module the library was loaded with (null before load()). */
function getKoffi() {
  return koffi;
}

/** The header's struct types (`omprpc_str`, `omprpc_event_view` …) by C name (null before load()). */
function structTypes() {
  return structs;
}

/** The path of the loaded library (null before load()). */
function libraryPath() {
  return loadedPath;
}

module.exports = {
  load,
  native,
  getKoffi,
  structTypes,
  libraryPath,
  libraryCandidates,
  take,
  failure,
  callOut,
  callNoOut,
  callOutRaw,
  callAsyncRaw,
  callEventFd,
  callEventHandle,
  settle,
};
