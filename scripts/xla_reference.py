#!/usr/bin/env python3
"""xla_reference.py — what real XLA:GPU does to an HLO module: the references fxplain is checked against.

Compiles an HLO text module with XLA:GPU itself, deviceless (no GPU, driver or CUDA toolkit needed),
for the GPU a target config describes, and keeps XLA's own stages of the module and its fusion log:

  NAME.pre_fusion.hlo                 the module priority-fusion received (after layout assignment,
                                      algsimp and every earlier pass)
  NAME.pre_fusion.hlo.pb              the same module as XLA's HloProto, with XLA's instruction ids
                                      (fxplain takes them from it when it loads NAME.pre_fusion.hlo)
  NAME.after_priority_fusion.hlo      right after priority-fusion
  NAME.after_multi_output_fusion.hlo  right after multi_output_fusion (the fusion pipeline's kernels)
  NAME.after_opt.hlo                  the final optimized module
  NAME.priority_fusion_dump.txt       priority-fusion's FusionProcessDump: each decision in order,
                                      with the cost model's times
  NAME.xla_reference.json             how it was made: device, target config, jaxlib version, status,
                                      workarounds applied and why, XLA_FLAGS, seconds, kernel counts

Files over 1 MiB are gzipped (NAME....gz) unless --no-gzip is given.

Usage:
  xla_reference.py [OPTIONS] MODULE.hlo OUTDIR
  xla_reference.py [OPTIONS] --corpus CORPUS_DIR OUTDIR [NAME ...]
      every CORPUS_DIR/*.hlo (or only the NAMEs), one process per module; OUTDIR/INDEX.tsv gets a
      row per module (status, seconds, workaround, kernel counts, note)

Options:
  --device NAME|FILE  h100 (default) or a100: scripts/xla/NAME.txtpb, which describes the same GPU
                      as fxplain's device profile of that name; or any GpuTargetConfigProto text file
  --unfuse            turn the input's fusion instructions into calls before compiling (done
                      automatically when XLA's verifier rejects foreign fusions, e.g. XLA:CPU's
                      kCustom __ynn_fusion)
  --disable-pass P    run XLA without pass P (repeatable); dynamic-slice-annotator is disabled
                      automatically when it fails with "Failed to evaluate instruction"
  --no-retry          do not retry a failed compile with the automatic workarounds
  --keep-dump         keep XLA's whole dump folder as OUTDIR/NAME.xla_dump
  --no-gzip           never gzip outputs
  --timeout S         seconds one compile may take (default 1500)

How (the facts come from ../shared/xla-oracle/README.md, jaxlib 0.10.2): the PJRT C API of jax's
CUDA plugin, jax_plugins/xla_cuda13/xla_cuda_plugin.so (wheel jax-cuda13-pjrt), called with ctypes:
PJRT_Plugin_Initialize; PJRT_TopologyDescription_Create with the options target_config (the config's
text) and topology "1x1x1", which needs no device; PJRT_Compile of program format "hlo" (the parsed
module's serialized HloModuleProto, so XLA gets exactly the given names and layouts). XLA_FLAGS,
which the plugin reads, makes XLA dump a snapshot of the fusion pipeline after each of its passes;
the stages above are those snapshots.

Known limits of this XLA and what the driver does about them (each is recorded in the .json):
  - topk's is_stable= attribute is newer than this XLA's parser: dropped (it does not change fusion).
  - dynamic-slice-annotator fails ("Failed to evaluate instruction ... depends on infeed or
    parameters"): retried with --xla_disable_hlo_passes=dynamic-slice-annotator.
  - modules already fused by XLA:CPU (kCustom __ynn_fusion): retried with --unfuse.
  - sort with the full H100/A100 spec becomes a CUB custom call whose scratch-size query needs a
    device, and jax's cu_threefry2x32 custom call has no handler in the bare PJRT path: both fail
    after XLA's HLO passes, whose dumps are complete; kept with status "hlo-only".
Exit status: 0 when every module got its references (ok or hlo-only), 1 when one failed, 2 for
usage errors, 3 when the wheels are missing.
"""
import ctypes as C
import glob
import gzip
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WHEELS = "jax==0.10.2 jaxlib==0.10.2 jax-cuda13-plugin==0.10.2 jax-cuda13-pjrt==0.10.2"
INSTALL_HINT = "install them with: python3 -m pip install " + WHEELS
EXIT_NO_WHEELS = 3
GZIP_OVER = 1 << 20

# The fusion pipeline's passes whose snapshots make the stages. Naming them (rather than `.*`)
# makes XLA dump a snapshot after each of them even when it changed nothing, so every stage has
# its own file; ^fusion$ keeps the other pipelines (which run the same pass names) out.
DUMP_PASSES = "variadic-op-splitter|sort-iota-fusion|priority-fusion|multi_output_fusion"
STAGES = (("pre_fusion", "before_priority-fusion"),
          ("after_priority_fusion", "after_priority-fusion"),
          ("after_multi_output_fusion", "after_multi_output_fusion"))


def fail_usage(msg):
    print(f"xla_reference: {msg}\n(run with --help for the usage)", file=sys.stderr)
    sys.exit(2)


# ---------- the PJRT C API, as far as a deviceless compile needs it ----------

def _struct(name, fields):
    """A PJRT argument struct: every one starts with struct_size and extension_start."""
    return type(name, (C.Structure,), {"_fields_": [("struct_size", C.c_size_t),
                                                    ("extension_start", C.c_void_p)] + fields})


NamedValue = _struct("NamedValue", [("name", C.c_char_p), ("name_size", C.c_size_t),
                                    ("type", C.c_int), ("value", C.c_void_p),
                                    ("value_size", C.c_size_t)])
Program = _struct("Program", [("code", C.c_void_p), ("code_size", C.c_size_t),
                              ("format", C.c_char_p), ("format_size", C.c_size_t)])
ErrorMessageArgs = _struct("ErrorMessageArgs", [("error", C.c_void_p), ("message", C.c_void_p),
                                                ("message_size", C.c_size_t)])
ErrorDestroyArgs = _struct("ErrorDestroyArgs", [("error", C.c_void_p)])
PluginInitArgs = _struct("PluginInitArgs", [])
TopologyCreateArgs = _struct("TopologyCreateArgs", [
    ("topology_name", C.c_char_p), ("topology_name_size", C.c_size_t),
    ("create_options", C.POINTER(NamedValue)), ("num_options", C.c_size_t),
    ("topology", C.c_void_p)])
TopologyDestroyArgs = _struct("TopologyDestroyArgs", [("topology", C.c_void_p)])
CompileArgs = _struct("CompileArgs", [
    ("topology", C.c_void_p), ("program", C.POINTER(Program)),
    ("compile_options", C.c_char_p), ("compile_options_size", C.c_size_t),
    ("client", C.c_void_p), ("executable", C.c_void_p)])
ExecutableDestroyArgs = _struct("ExecutableDestroyArgs", [("executable", C.c_void_p)])

# Slots of the function pointers in PJRT_Api (pjrt_c_api.h; the table only grows within major
# version 0). They follow struct_size, extension_start and PJRT_Api_Version (size_t, void *,
# int major, int minor): 40 bytes.
API_FUNCTIONS_AT = 40
API_VERSION_AT = 32
SLOT = {"Error_Destroy": 0, "Error_Message": 1, "Plugin_Initialize": 3, "Executable_Destroy": 40,
        "TopologyDescription_Create": 82, "TopologyDescription_Destroy": 83, "Compile": 89}
NAMED_VALUE_STRING = 0


class Pjrt:
    """The plugin's PJRT_Api table; each call raises RuntimeError with XLA's own message."""

    def __init__(self, path):
        lib = C.CDLL(path)
        lib.GetPjrtApi.restype = C.c_void_p
        self.api = lib.GetPjrtApi()
        major, minor = (C.c_int * 2).from_address(self.api + API_VERSION_AT)
        self.version = f"{major}.{minor}"
        if major != 0:
            raise RuntimeError(f"PJRT C API {self.version}: this driver knows the layout of 0.x only")
        self.call("Plugin_Initialize", PluginInitArgs())

    def _fn(self, name, argtype, restype=C.c_void_p):
        ptr = C.c_void_p.from_address(self.api + API_FUNCTIONS_AT + 8 * SLOT[name]).value
        return C.CFUNCTYPE(restype, C.POINTER(argtype))(ptr)

    def call(self, name, args):
        args.struct_size = C.sizeof(args)
        err = self._fn(name, type(args))(C.byref(args))
        if err:
            m = ErrorMessageArgs(C.sizeof(ErrorMessageArgs), None, err)
            self._fn("Error_Message", ErrorMessageArgs, None)(C.byref(m))
            text = C.string_at(m.message, m.message_size).decode(errors="replace")
            self._fn("Error_Destroy", ErrorDestroyArgs, None)(
                C.byref(ErrorDestroyArgs(C.sizeof(ErrorDestroyArgs), None, err)))
            raise RuntimeError(text)
        return args

    def topology(self, target_config_text):
        """A compile-only topology of one GPU described by the target config: no device needed."""
        keep, opts = [], (NamedValue * 2)()
        for i, (key, value) in enumerate((("target_config", target_config_text),
                                          ("topology", "1x1x1"))):
            k, v = key.encode(), value.encode()
            buf = C.create_string_buffer(v, len(v))
            keep += [k, buf]
            opts[i] = NamedValue(C.sizeof(NamedValue), None, k, len(k), NAMED_VALUE_STRING,
                                 C.cast(buf, C.c_void_p), len(v))
        return self.call("TopologyDescription_Create",
                         TopologyCreateArgs(create_options=opts, num_options=2)).topology

    def compile(self, topology, hlo_module_proto, compile_options):
        """Runs XLA:GPU's whole pipeline on the module (a serialized HloModuleProto)."""
        code = C.create_string_buffer(hlo_module_proto, len(hlo_module_proto))
        program = Program(C.sizeof(Program), None, C.cast(code, C.c_void_p),
                          len(hlo_module_proto), b"hlo", 3)
        exe = self.call("Compile", CompileArgs(topology=topology, program=C.pointer(program),
                                               compile_options=compile_options,
                                               compile_options_size=len(compile_options))).executable
        self.call("Executable_Destroy", ExecutableDestroyArgs(executable=exe))
        self.call("TopologyDescription_Destroy", TopologyDestroyArgs(topology=topology))


# ---------- rewriting the input where this XLA cannot take it as it is ----------

def _skip_value(s, i):
    """The index just past the attribute value that starts at s[i]: a quoted string, a braced
    group (quotes and nesting respected) or a bare word."""
    if s[i] == '"':
        i += 1
        while s[i] != '"':
            i += 2 if s[i] == "\\" else 1
        return i + 1
    if s[i] == "{":
        depth = 0
        while True:
            if s[i] == '"':
                i = _skip_value(s, i)
                continue
            depth += {"{": 1, "}": -1}.get(s[i], 0)
            i += 1
            if depth == 0:
                return i
    m = re.compile(r"[^,\s)}]*").match(s, i)
    return m.end()


def drop_attribute(line, name):
    """The instruction line without its attribute `name=...`."""
    m = re.search(r",\s*" + re.escape(name) + "=", line)
    if not m:
        return line
    return line[:m.start()] + line[_skip_value(line, m.end()):]


def unfuse(canonical_text):
    """Every fusion instruction becomes a call of its fused computation, which XLA's call inliner
    then inlines: XLA:GPU's verifier rejects fusions it did not make itself (e.g. XLA:CPU's kCustom
    __ynn_fusion). Takes the parser's own printing (one instruction per line)."""
    out = []
    for line in canonical_text.splitlines():
        if re.search(r"\sfusion\(", line) and "calls=" in line:
            line = re.sub(r"\sfusion\(", " call(", line, count=1)
            line = drop_attribute(drop_attribute(line, "kind"), "backend_config")
            line = line.replace("calls=", "to_apply=", 1)
        out.append(line)
    return "\n".join(out) + "\n"


# ---------- one compile, in its own process (XLA may abort the process) ----------

def worker(config_path, hlo_path, do_unfuse):
    """Parses the module, applies the in-process workarounds (each printed as a `note:` line for
    the parent to record) and compiles it; XLA_FLAGS in the environment makes XLA dump."""
    from jaxlib import _hlo
    from jax._src.lib import xla_client
    text = open(hlo_path).read()
    try:
        module = _hlo.hlo_module_from_text(text)
    except Exception as e:
        if "is_stable" not in str(e):
            raise
        print("note: dropped topk's is_stable attribute, which this XLA's parser does not know "
              "(it does not change fusion)", flush=True)
        module = _hlo.hlo_module_from_text(re.sub(r",\s*is_stable=(true|false)", "", text))
    if do_unfuse:
        print("note: --unfuse: the input's fusion instructions were compiled as calls", flush=True)
        module = _hlo.hlo_module_from_text(unfuse(module.to_string()))
    options = xla_client.CompileOptions()
    options.num_replicas = 1
    options.num_partitions = 1
    pjrt = Pjrt(plugin_path())
    print(f"pjrt: {pjrt.version}", flush=True)
    pjrt.compile(pjrt.topology(open(config_path).read()),
                 module.as_serialized_hlo_module_proto(), options.SerializeAsString())


# ---------- the wheels ----------

def plugin_path():
    spec = importlib.util.find_spec("jax_plugins")
    for d in (spec.submodule_search_locations if spec else []):
        hits = sorted(glob.glob(os.path.join(d, "xla_cuda*", "xla_cuda_plugin.so")))
        if hits:
            return hits[0]
    return None


def check_wheels():
    """None when real XLA:GPU can run here, else why not (without importing jax: that is slow)."""
    for mod, wheel in (("jax", "jax"), ("jaxlib", "jaxlib"), ("jax_plugins", "jax-cuda13-pjrt")):
        if importlib.util.find_spec(mod) is None:
            return f"{sys.executable} has no module {mod} (wheel {wheel})"
    if plugin_path() is None:
        return f"{sys.executable} has no jax_plugins/xla_cuda*/xla_cuda_plugin.so (wheel jax-cuda13-pjrt)"
    return None


def package_version(name):
    try:
        from importlib.metadata import version
        return version(name)
    except Exception:
        return "unknown"


# ---------- the parent: attempts, workarounds, stages ----------

def count_kernels(text):
    """(fusions, custom calls) anywhere in a module, nested computations included."""
    return (len(re.findall(r"\s=\s[^=\n]*?\sfusion\(", text)),
            len(re.findall(r"\s=\s[^=\n]*?\scustom-call\(", text)))


def snapshots(dump):
    """The fusion pipeline's snapshots of the compiled module, in the order XLA wrote them."""
    files = glob.glob(os.path.join(dump, "module_*.[0-9][0-9][0-9][0-9].fusion.after_*.txt"))
    return sorted(files, key=lambda f: int(re.search(r"\.(\d{4})\.fusion\.", f).group(1)))


def stage_file(snaps, marker):
    """The snapshot holding the module at `marker` ("after_PASS" or "before_PASS"). Without a
    snapshot named before priority-fusion, the last one written before priority-fusion's own."""
    hits = [f for f in snaps if f".{marker}." in os.path.basename(f)]
    if hits:
        return hits[0]
    if marker == "before_priority-fusion":
        after = stage_file(snaps, "after_priority-fusion")
        if after and snaps.index(after) > 0:
            return snaps[snaps.index(after) - 1]
    return None


def last_error_line(stderr):
    """The worker's one-line `error:` (XLA's message), else the last line (XLA aborted)."""
    lines = [l.strip() for l in stderr.splitlines() if l.strip()]
    for l in reversed(lines):
        if l.startswith("error: "):
            return l[len("error: "):]
    return lines[-1] if lines else ""


def compile_once(args, path, dump, do_unfuse, disabled):
    shutil.rmtree(dump, ignore_errors=True)
    os.makedirs(dump)
    flags = [f"--xla_dump_to={dump}", "--xla_dump_hlo_as_text", "--xla_dump_hlo_as_proto",
             f"--xla_dump_hlo_pass_re={DUMP_PASSES}", "--xla_dump_hlo_pipeline_re=^fusion$"]
    if disabled:
        flags.append("--xla_disable_hlo_passes=" + ",".join(disabled))
    env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS=" ".join(flags))
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", args.config, path]
    if do_unfuse:
        cmd.append("--unfuse")
    t0 = time.time()
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.timeout)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        rc, out, err = -9, "", f"the compile took longer than {args.timeout} s"
    with open(os.path.join(dump, "xla_stderr.txt"), "w") as f:
        f.write(err)
    return {"rc": rc, "stdout": out, "stderr": err, "seconds": time.time() - t0,
            "xla_flags": env["XLA_FLAGS"].replace(dump, "DUMP")}


def choose_workaround(err, text, do_unfuse, disabled):
    """The automatic workaround for a failed compile, as (description, unfuse, disabled passes),
    or None when no known limit explains the failure."""
    if "Failed to evaluate instruction" in err and "dynamic-slice-annotator" not in disabled:
        return ("--xla_disable_hlo_passes=dynamic-slice-annotator: the pass's HloEvaluator failed "
                "(\"Failed to evaluate instruction\")", do_unfuse, disabled + ["dynamic-slice-annotator"])
    if not do_unfuse and "fused computation" in err and re.search(r"\sfusion\(", text):
        return ("--unfuse: XLA:GPU's verifier rejected the input's own fusions",
                True, disabled)
    return None


def put(src, dst, gzip_ok):
    """Copies src to dst, gzipped (dst + '.gz') when larger than 1 MiB; returns the file written."""
    for old in (dst, dst + ".gz"):
        if os.path.exists(old):
            os.remove(old)
    if gzip_ok and os.path.getsize(src) > GZIP_OVER:
        with open(src, "rb") as fi, gzip.open(dst + ".gz", "wb") as fo:
            shutil.copyfileobj(fi, fo)
        return dst + ".gz"
    shutil.copyfile(src, dst)
    return dst


def reference(args, path, outdir, name):
    """Makes NAME's references in outdir; returns the record written to NAME.xla_reference.json."""
    text = open(path).read()
    do_unfuse, disabled = args.unfuse, list(args.disable_pass)
    workarounds = []
    if do_unfuse:
        workarounds.append("--unfuse (asked for)")
    if disabled:
        workarounds.append("--xla_disable_hlo_passes=" + ",".join(disabled) + " (asked for)")
    tmp = tempfile.mkdtemp(prefix=f"xla_reference.{name}.")
    seconds = 0.0
    try:
        while True:
            dump = os.path.join(tmp, "dump")
            run = compile_once(args, path, dump, do_unfuse, disabled)
            seconds += run["seconds"]
            if run["rc"] == 0 or args.no_retry:
                break
            w = choose_workaround(run["stderr"], text, do_unfuse, disabled)
            if not w:
                break
            workarounds.append(w[0])
            do_unfuse, disabled = w[1], w[2]

        notes = [l[len("note: "):] for l in run["stdout"].splitlines() if l.startswith("note: ")]
        pjrt = [l[len("pjrt: "):] for l in run["stdout"].splitlines() if l.startswith("pjrt: ")]
        final = glob.glob(os.path.join(dump, "module_*gpu_after_optimizations.txt"))
        record = {"input": os.path.abspath(path), "name": name, "device": args.device,
                  "target_config": os.path.abspath(args.config),
                  "target_config_sha256": hashlib.sha256(open(args.config, "rb").read()).hexdigest(),
                  "jaxlib": package_version("jaxlib"),
                  "jax_cuda13_pjrt": package_version("jax-cuda13-pjrt"),
                  "pjrt_c_api": pjrt[0] if pjrt else "", "seconds": round(seconds, 2),
                  "workarounds": workarounds, "notes": notes, "xla_flags": run["xla_flags"],
                  "files": {}, "fusions": {}, "custom_calls": {}}
        if run["rc"] == 0:
            record["status"] = "ok"
        elif final:
            # XLA finished its HLO passes (and dumped every stage) and failed after them, in a
            # step that needs a device or a handler jax registers only in its own client.
            record["status"] = "hlo-only"
            why = last_error_line(run["stderr"])
            if "cu_threefry2x32" in text:
                why = ("jax's cu_threefry2x32 custom call has no handler in the bare PJRT path: " + why)
            elif re.search(r"custom_call_target=\"[^\"]*cub", open(final[0]).read()):
                why = ("XLA made a sort a CUB custom call, whose scratch-size query needs a device: "
                       + why)
            record["notes"].append("HLO passes done; failed after them: " + why)
        else:
            record["status"] = "failed"
            record["error"] = last_error_line(run["stderr"])
        if record["status"] != "failed":
            snaps = snapshots(dump)
            wanted = [(stage, stage_file(snaps, marker)) for stage, marker in STAGES]
            wanted += [("after_opt", final[0])]
            missing = [stage for stage, f in wanted if not f]
            if missing:
                record["status"] = "failed"
                record["error"] = "XLA's dump has no snapshot for " + ", ".join(missing)
            for stage, f in wanted:
                if f:
                    record["files"][stage] = os.path.basename(
                        put(f, os.path.join(outdir, f"{name}.{stage}.hlo"), not args.no_gzip))
                    nf, nc = count_kernels(open(f).read())
                    record["fusions"][stage], record["custom_calls"][stage] = nf, nc
                    # The same snapshot as XLA's proto: its instruction ids, which the text does
                    # not print and XLA breaks priority-fusion's ties by.
                    pb = f[:-len(".txt")] + ".hlo.pb"
                    if stage == "pre_fusion" and os.path.exists(pb):
                        record["files"]["pre_fusion_ids"] = os.path.basename(
                            put(pb, os.path.join(outdir, f"{name}.pre_fusion.hlo.pb"), not args.no_gzip))
            log = glob.glob(os.path.join(dump, "module_*.priority_fusion_dump.txt"))
            if log:
                record["files"]["priority_fusion_dump"] = os.path.basename(
                    put(log[0], os.path.join(outdir, f"{name}.priority_fusion_dump.txt"),
                        not args.no_gzip))
        if args.keep_dump:
            keep = os.path.join(outdir, f"{name}.xla_dump")
            shutil.rmtree(keep, ignore_errors=True)
            shutil.copytree(dump, keep)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    with open(os.path.join(outdir, f"{name}.xla_reference.json"), "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    return record


INDEX_HEADER = ["input", "bytes", "status", "seconds", "workaround", "fusions", "custom_calls",
                "fusions_after_multi_output_fusion", "note"]


def index_row(path, record):
    note = "; ".join(record["notes"] + ([record["error"]] if "error" in record else []))
    return [record["name"], os.path.getsize(path), record["status"], f"{record['seconds']:.1f}",
            "; ".join(w.split(":")[0] for w in record["workarounds"]),
            record["fusions"].get("after_opt", ""), record["custom_calls"].get("after_opt", ""),
            record["fusions"].get("after_multi_output_fusion", ""),
            note.replace("\t", " ").replace("\n", " ")[:300]]


def parse_args(argv):
    import argparse
    p = argparse.ArgumentParser(prog="xla_reference.py", add_help=False)
    p.add_argument("-h", "--help", action="store_true")
    p.add_argument("--device", default="h100")
    p.add_argument("--corpus", action="store_true")
    p.add_argument("--unfuse", action="store_true")
    p.add_argument("--disable-pass", action="append", default=[])
    p.add_argument("--no-retry", action="store_true")
    p.add_argument("--keep-dump", action="store_true")
    p.add_argument("--no-gzip", action="store_true")
    p.add_argument("--timeout", type=int, default=1500)
    p.add_argument("paths", nargs="*")
    p.error = fail_usage
    args = p.parse_args(argv)
    if args.help:
        print(__doc__.strip())
        sys.exit(0)
    if len(args.paths) < 2 or (not args.corpus and len(args.paths) != 2):
        fail_usage("expected MODULE.hlo OUTDIR, or --corpus CORPUS_DIR OUTDIR [NAME ...]")
    if os.path.isfile(args.device):
        args.config = args.device
    else:
        args.config = os.path.join(HERE, "xla", args.device + ".txtpb")
        if not os.path.isfile(args.config):
            known = sorted(os.path.basename(f)[:-6] for f in glob.glob(os.path.join(HERE, "xla", "*.txtpb")))
            fail_usage(f"no target config for device '{args.device}' (devices: {', '.join(known)}; "
                       "or give a GpuTargetConfigProto text file)")
    return args


def main(argv):
    if argv[:1] == ["--worker"]:
        try:
            worker(argv[1], argv[2], "--unfuse" in argv[3:])
        except Exception as e:  # XLA's message on one line for the record; the traceback too
            import traceback
            traceback.print_exc()
            print("error: " + " ".join(str(e).split()), file=sys.stderr)
            return 1
        return 0
    args = parse_args(argv)
    why = check_wheels()
    if why:
        print(f"xla_reference: real XLA:GPU is not installed: {why}; {INSTALL_HINT}", file=sys.stderr)
        return EXIT_NO_WHEELS
    src, outdir = args.paths[0], args.paths[1]
    os.makedirs(outdir, exist_ok=True)
    if not args.corpus:
        if not os.path.isfile(src):
            fail_usage(f"cannot read the module {src}")
        name = re.sub(r"\.hlo$", "", os.path.basename(src))
        r = reference(args, src, outdir, name)
        counts = ""
        if r["status"] != "failed":
            counts = (f", {r['fusions']['after_multi_output_fusion']} fusions after "
                      f"multi_output_fusion, {r['fusions']['after_opt']} in the final module")
        print(f"{name}: {r['status']} in {r['seconds']:.1f} s on {args.device}{counts}"
              + "".join(f"\n  workaround: {w}" for w in r["workarounds"])
              + "".join(f"\n  note: {n}" for n in r["notes"])
              + (f"\n  error: {r['error']}" if "error" in r else "")
              + f"\n  -> {outdir}/{name}.*")
        return 0 if r["status"] != "failed" else 1
    files = sorted(glob.glob(os.path.join(src, "*.hlo")))
    if args.paths[2:]:
        files = [f for f in files if os.path.basename(f)[:-4] in args.paths[2:]]
    if not files:
        fail_usage(f"no .hlo modules in {src}" + (" with those names" if args.paths[2:] else ""))
    index = os.path.join(outdir, "INDEX.tsv")
    rows = {}
    if os.path.exists(index):  # regenerating some modules keeps the others' rows
        for line in open(index).read().splitlines()[1:]:
            rows[line.split("\t")[0]] = line
    failed = 0
    for path in files:
        r = reference(args, path, outdir, os.path.basename(path)[:-4])
        failed += r["status"] == "failed"
        row = "\t".join(str(x) for x in index_row(path, r))
        rows[r["name"]] = row
        print(row, flush=True)
        with open(index, "w") as f:
            f.write("\t".join(INDEX_HEADER) + "\n" + "".join(rows[k] + "\n" for k in sorted(rows)))
    print(f"{len(files) - failed}/{len(files)} modules have references in {outdir} "
          f"(device {args.device}); the table is {index}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
