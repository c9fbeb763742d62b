"""Runs tensorflow.org tutorials and guides statement by statement, under
loopax (`import loopax.tf as tf`) and under TensorFlow, and counts failures.

    python tools/tf_tutorials/run.py --tf-docs DOCS [--keras-io KIO] [--loopax-path PATH]

See README.md in this folder.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import substitutions  # noqa: E402

TUTORIALS = [
    "tutorials/quickstart/beginner", "tutorials/quickstart/advanced",
    "tutorials/keras/classification", "tutorials/keras/regression",
    "tutorials/keras/save_and_load", "tutorials/images/cnn",
    "tutorials/images/classification", "tutorials/images/data_augmentation",
    "tutorials/generative/dcgan", "tutorials/generative/autoencoder",
    "tutorials/generative/cvae", "tutorials/structured_data/imbalanced_data",
    "tutorials/customization/basics", "tutorials/load_data/numpy",
    "tutorials/distribute/custom_training",
]
GUIDES = [
    "guide/basics", "guide/tensor", "guide/variable", "guide/autodiff",
    "guide/intro_to_graphs", "guide/intro_to_modules", "guide/function",
    "guide/basic_training_loops", "guide/data", "guide/checkpoint",
    "keras-io:custom_train_step_in_tensorflow",
    "keras-io:writing_a_custom_training_loop_in_tensorflow",
]
# The twelve guides: the eight "TensorFlow basics" guides, the two whose
# scripts tests/tf_guides/ already mirrors (data, checkpoint), and the two
# Keras guides TensorFlow's site lists for tf.keras (from keras-io).


def notebook_path(name, tf_docs, keras_io):
    if name.startswith("keras-io:"):
        if keras_io is None:
            return None
        return Path(keras_io) / "guides" / "ipynb" / f"{name.split(':', 1)[1]}.ipynb"
    return Path(tf_docs) / "site" / "en" / f"{name}.ipynb"


def _writefile(cell):
    first, _, body = cell.partition("\n")
    target = first.split(None, 1)[1].strip()
    return f"with open({target!r}, 'w') as _f:\n    _f.write({body!r})"


def cell_statements(cell):
    """Top-level statements of one code cell, as source text."""
    if cell.lstrip().startswith("%%"):
        if cell.lstrip().startswith("%%writefile"):
            return [_writefile(cell.lstrip())]
        first, _, body = cell.lstrip().partition("\n")
        if first.split()[0] in ("%%time", "%%timeit", "%%capture"):
            return cell_statements(body)   # the body runs once, in the namespace
        return []
    lines = [("" if ln.lstrip().startswith(("!", "%")) else ln) for ln in cell.splitlines()]
    text = "\n".join(lines)
    try:
        tree = ast.parse(text)
    except SyntaxError as e:
        return [f"raise SyntaxError({('cell does not parse: ' + str(e))!r})"]
    out = []
    for node in tree.body:
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        out.append("\n".join(lines[start - 1:node.end_lineno]))
    return out


def apply_subs(text, subs, used):
    for i, (pattern, repl, _reason) in enumerate(subs):
        text, n = re.subn(pattern, repl, text, flags=re.M)
        if n:
            used.add(i)
    return text


def convert(nb_file, name, backend):
    """[statement text], [unused per-notebook substitution reasons]."""
    nb = json.loads(Path(nb_file).read_text())
    cells = ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
             for c in nb["cells"] if c["cell_type"] == "code"]
    per_nb = substitutions.PER_NOTEBOOK.get(name, [])
    used_generic, used_nb, used_imports = set(), set(), set()
    statements = []
    for cell in cells:
        cell = apply_subs(cell, substitutions.GENERIC, used_generic)
        cell = apply_subs(cell, per_nb, used_nb)
        if backend == "loopax":
            cell = apply_subs(cell, substitutions.IMPORTS, used_imports)
        statements.extend(cell_statements(cell))
    unused = [reason for i, (_, _, reason) in enumerate(per_nb) if i not in used_nb]
    return statements, unused


CHILD = r"""
import ast, json, linecache, os, signal, sys, time, traceback
spec = json.load(open(sys.argv[1]))
out = open(sys.argv[2], "w", buffering=1)
sys.path[:0] = spec["front_path"]
sys.path.extend(spec["back_path"])
os.chdir(spec["workdir"])
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as _plt
_plt.show = lambda *a, **k: None
import fakes as _tt
ns = {"__name__": "__main__", "_tt": _tt}
class _Timeout(BaseException):
    pass
def _alarm(*_):
    raise _Timeout()
signal.signal(signal.SIGALRM, _alarm)
sys.displayhook = lambda value: repr(value) if value is not None else None
for i, src in enumerate(spec["statements"]):
    t0 = time.time()
    status, err = "pass", ""
    signal.alarm(spec["timeout"])
    try:
        name = f"<stmt {i}>"
        # the source stays readable by inspect (autograph, to_code), as IPython keeps a cell's
        linecache.cache[name] = (len(src), None, src.splitlines(True), name)
        code = compile(ast.Interactive(ast.parse(src).body), name, "single")
        exec(code, ns)
    except _Timeout:
        status, err = "fail", f"Timeout: over {spec['timeout']} s"
    except BaseException as e:
        status = "fail"
        msg = str(e).strip().splitlines()
        err = type(e).__name__ + (": " + msg[0] if msg else "")
        if isinstance(e, SystemExit):
            err = "SystemExit"
    finally:
        signal.alarm(0)
    sys.stdout.flush()
    record = {"i": i, "status": status, "error": err[:300], "s": round(time.time() - t0, 2)}
    out.write(json.dumps(record) + "\n")
"""


def run_notebook(statements, backend, args, name):
    with tempfile.TemporaryDirectory(prefix="tt_") as work:
        spec_file, res_file = Path(work) / "spec.json", Path(work) / "res.jsonl"
        wd = Path(work) / "cwd"
        wd.mkdir()
        env = dict(os.environ, MPLBACKEND="Agg", TT_CACHE=str(Path(work) / "cache"),
                   TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="",
                   PYTHONPATH="", PYTHONHASHSEED="0")
        front = [str(HERE), str(HERE / "stubs")]
        back = []
        if backend == "loopax":
            python = args.loopax_python
            front.insert(0, str(Path(args.loopax_path).resolve()))
            env.update(TT_TF_MODULE="loopax.tf", JAX_PLATFORMS="cpu")
        else:
            python = args.tf_python
            env.update(TT_TF_MODULE="tensorflow")
            # pandas/matplotlib/sklearn/scipy are not in the TF venv: borrow
            # them (same Python and NumPy) from the loopax venv, after TF's own.
            back = [p for p in json.loads(subprocess.check_output(
                [args.loopax_python, "-c", "import sys, json; print(json.dumps(sys.path))"],
                text=True)) if p.endswith("site-packages")]
        spec_file.write_text(json.dumps({
            "statements": statements, "timeout": args.stmt_timeout,
            "front_path": front, "back_path": back, "workdir": str(wd)}))
        child = Path(work) / "child.py"
        child.write_text(CHILD)
        log = Path(args.out) / "logs" / f"{name.replace('/', '_').replace(':', '_')}.{backend}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        t0 = time.time()
        with open(log, "w") as logf:
            try:
                proc = subprocess.run([python, str(child), str(spec_file), str(res_file)],
                                      env=env, stdout=logf, stderr=subprocess.STDOUT,
                                      timeout=args.nb_timeout)
                ended = f"exit {proc.returncode}"
            except subprocess.TimeoutExpired:
                ended = f"notebook timeout {args.nb_timeout} s"
        results = [json.loads(line) for line in res_file.read_text().splitlines() if line.strip()]
        for i in range(len(results), len(statements)):
            results.append(
                {"i": i, "status": "fail", "error": f"NotRun: process ended ({ended})", "s": 0}
            )
        return results, round(time.time() - t0, 1)


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--tf-docs", required=True, help="a checkout of github.com/tensorflow/docs")
    p.add_argument(
        "--keras-io", help="a checkout of github.com/keras-team/keras-io (two Keras guides)"
    )
    p.add_argument("--loopax-path", default=str(HERE.parent.parent), help="loopax checkout to test")
    p.add_argument("--loopax-python", default=sys.executable)
    p.add_argument("--tf-python", default="/work/tfvenv/bin/python")
    p.add_argument("--backends", default="loopax,tf")
    p.add_argument("--only", help="comma-separated substrings of notebook names")
    p.add_argument("--stmt-timeout", type=int, default=180)
    p.add_argument("--nb-timeout", type=int, default=900)
    p.add_argument("--out", default="/tmp/tf_tutorials_out")
    p.add_argument("--jobs", "-j", type=int, default=1, help="notebook runs in parallel")
    args = p.parse_args(argv)
    backends = args.backends.split(",")
    names = TUTORIALS + GUIDES
    if args.only:
        names = [n for n in names if any(s in n for s in args.only.split(","))]
    report = {}
    jobs = []
    for name in names:
        nb = notebook_path(name, args.tf_docs, args.keras_io)
        if nb is None or not nb.exists():
            print(f"-- {name}: notebook not found ({nb}); skipped", flush=True)
            continue
        report[name] = {}
        jobs += [(name, nb, backend) for backend in backends]

    def one(job):
        name, nb, backend = job
        statements, unused = convert(nb, name, backend)
        results, secs = run_notebook(statements, backend, args, name)
        for r, s in zip(results, statements):
            r["src"] = s
        report[name][backend] = {"results": results, "seconds": secs, "unused_subs": unused}
        nfail = sum(r["status"] == "fail" for r in results)
        print(
            f"   {name:55s} {backend:6s} {nfail:3d}/{len(results):3d} fail  {secs:6.1f} s",
            flush=True,
        )

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        list(pool.map(one, jobs))
    report = {name: report[name] for name in report if len(report[name]) == len(backends)}
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "report.json").write_text(json.dumps(report, indent=1))
    print_report(report, backends)


def print_report(report, backends):
    print()
    print(
        "| notebook | statements | "
        f"{' | '.join(b + ' fail' for b in backends)} | loopax-only fail |"
    )
    print("|---|---:|" + "---:|" * len(backends) + "---:|")
    groups = {"tutorials": [0] * (len(backends) + 3), "guide": [0] * (len(backends) + 3)}
    causes = defaultdict(list)
    for name, entry in report.items():
        first = entry[backends[0]]["results"]
        fails = [sum(r["status"] == "fail" for r in entry[b]["results"]) for b in backends]
        only = 0
        if "loopax" in entry and "tf" in entry:
            tfr = entry["tf"]["results"]
            for r in entry["loopax"]["results"]:
                if r["status"] == "fail" and (
                    r["i"] >= len(tfr) or tfr[r["i"]]["status"] == "pass"
                ):
                    only += 1
                    causes[r["error"]].append((name, r["i"], r["src"]))
        print(f"| {name} | {len(first)} | {' | '.join(map(str, fails))} | {only} |")
        g = groups["tutorials" if name.startswith("tutorials") else "guide"]
        for k, v in enumerate([len(first), *fails, only]):
            g[k] += v
        if "loopax" in entry:
            g[-1] += all(r["status"] == "pass" for r in entry["loopax"]["results"])
    for g, v in groups.items():
        print(
            f"| **{g} total** | {v[0]} | "
            f"{' | '.join(map(str, v[1 : 1 + len(backends)]))} | {v[1 + len(backends)]} |"
            f"  ({v[-1]} run to the end under loopax)"
        )
    if causes:
        print("\nloopax-only failures (TF passes the same statement), by first error line:")
        for err, items in sorted(causes.items(), key=lambda kv: -len(kv[1])):
            print(f"\n[{len(items)}] {err}")
            for name, i, src in items:
                line = src.strip().splitlines()[0] if src.strip() else ""
                print(f"    {name} #{i}: {line[:110]}")


if __name__ == "__main__":
    main()
