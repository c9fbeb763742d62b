"""Autograph: Python control flow on traced values inside `loopax.function`.

`tf.function`'s autograph, on JAX. The first time a function is compiled its
source is parsed and rewritten once (cached by its code object):

- `return`, `break` and `continue` inside `if`/`while`/`for` become flags
  (`do_return`, `break_`, `continue_`) and the statements after them run under
  `if not flag:`; an `if` that returns in one branch takes the statements that
  follow it into its other branch;
- each `if`/`while`/`for` becomes a call of `if_stmt` / `while_stmt` /
  `for_stmt` below, with its branches or body as nested functions of the
  variables it assigns (its state), and `x if c else y` a call of `if_exp`;
  `and`/`or`/`not` in their conditions become `and_`/`or_`/`not_`.

At run (trace) time each call looks at the condition: a Python value (or a
concrete array) runs the statement as Python, as before; a traced value makes
it `lax.cond` / `lax.while_loop` / `lax.fori_loop`, the state carried as loop
values. Variables assigned inside are carried too (each branch or body runs
in a `StateScope` of its own). `for` over `range`/`tf.range` with a traced
bound or over a Tensor is a lax loop; over anything else (a list, a dataset)
it stays a Python loop, unrolled. A variable that exists on one path only
stays undefined (using it raises an error naming the statement's file and
line), and a state that changes shape or structure in a lax loop or branch
raises an error naming the variable, file and line.

The rewritten function has the original's globals and closure cells and its
line numbers, so tracebacks point at the user's source. `do_not_convert` and
`loopax.function(..., autograph=False)` keep a function as written.
"""

from __future__ import annotations

import ast
import builtins
import functools
import inspect
import os
import sys
import sysconfig
import textwrap
import types
import weakref

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src.ops import numpy as ops_numpy
from loopax.src.state import StateScope, Variable, _state, is_tracer, tracing
from loopax.src.tensor import Tensor

_AG = "_lx_ag"          # the name of this module inside converted code
_NOT_CONVERTED = "__loopax_do_not_convert__"
_converted = {}          # code object -> (converted code, source) or None


# --------------------------------------------------------------------------
# Public switches
# --------------------------------------------------------------------------

def do_not_convert(func=None):
    """Marks `func` to run as written inside `loopax.function` (no autograph),
    as `tf.autograph.experimental.do_not_convert`; usable as a decorator."""
    if func is None:
        return do_not_convert
    try:
        setattr(func, _NOT_CONVERTED, True)
        return func
    except (AttributeError, TypeError):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            return func(*args, **kwargs)
        setattr(wrapper, _NOT_CONVERTED, True)
        return wrapper


def to_code(func):
    """The source of `func` as autograph rewrites it (`tf.autograph.to_code`)."""
    func = getattr(func, "python_function", func)
    entry = _conversion(inspect.unwrap(func))
    if entry is None:
        return textwrap.dedent(inspect.getsource(func))
    return entry[1]


def convert(func):
    """`func` with its Python control flow rewritten (see the module docstring),
    or `func` itself when there is nothing to rewrite or its source is not
    available (a lambda, code made by exec, a builtin)."""
    if getattr(func, _NOT_CONVERTED, False):
        return func
    if isinstance(func, types.MethodType):
        inner = convert(func.__func__)
        return func if inner is func.__func__ else types.MethodType(inner, func.__self__)
    if not isinstance(func, types.FunctionType):
        return func
    entry = _conversion(func)
    if entry is None:
        return func
    code = entry[0]
    cells = dict(zip(func.__code__.co_freevars, func.__closure__ or ()))
    cells[_AG] = types.CellType(sys.modules[__name__])
    closure = tuple(cells[name] for name in code.co_freevars)
    new = types.FunctionType(code, func.__globals__, func.__name__, func.__defaults__,
                             closure)
    new.__kwdefaults__ = func.__kwdefaults__
    new.__qualname__, new.__module__ = func.__qualname__, func.__module__
    new.__doc__ = func.__doc__
    new.__dict__.update(func.__dict__)
    new.__wrapped_by_autograph__ = func
    return new


def _conversion(func):
    code = func.__code__
    if code in _converted:
        return _converted[code]
    entry = None
    if not (code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE
                             | inspect.CO_ASYNC_GENERATOR)) and func.__name__ != "<lambda>":
        entry = _transform(func)
    _converted[code] = entry
    return entry


# --------------------------------------------------------------------------
# The source rewrite
# --------------------------------------------------------------------------

class ConversionError(SyntaxError):
    """A construct autograph cannot rewrite; names the file and line."""


def _transform(func):
    if hasattr(func, "__wrapped__"):
        # a decorator's wrapper: inspect would give the wrapped function's source,
        # which compiled with the wrapper's closure would skip the decorator
        return None
    try:
        source = inspect.getsource(func)
        first_line = inspect.getsourcelines(func)[1]
        filename = inspect.getsourcefile(func) or func.__code__.co_filename
    except (OSError, TypeError):
        return None
    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return None
    fdef = tree.body[0] if tree.body else None
    if not isinstance(fdef, (ast.FunctionDef, ast.AsyncFunctionDef)) or fdef.name != func.__name__:
        return None
    if not any(isinstance(n, (ast.If, ast.While, ast.For, ast.IfExp, ast.Call))
               for n in _walk_scope(fdef.body)):
        return None   # nothing to convert: the function runs as written
    ast.increment_lineno(tree, first_line - 1)
    fdef.decorator_list = []
    # Compiled under another name: inside the factory its own name must stay a global
    # (or closure) reference, as in the original (a recursive call).
    fdef.name = "_lx_converted"
    owner = _class_of(func)
    rewriter = _Rewriter(filename, owner)
    rewriter.function(fdef)
    factory = ast.FunctionDef(
        name="_lx_factory",
        args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=n) for n in
                                                 (*func.__code__.co_freevars, _AG)],
                           kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=[fdef, ast.Return(value=ast.Name(id=fdef.name, ctx=ast.Load()))],
        decorator_list=[], returns=None, type_params=[])
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    compiled = compile(module, filename, "exec")
    factory_code = next(c for c in compiled.co_consts if isinstance(c, types.CodeType))
    code = next(c for c in factory_code.co_consts
                if isinstance(c, types.CodeType) and c.co_name == fdef.name)
    code = code.replace(co_name=func.__name__)
    if hasattr(code, "co_qualname"):
        code = code.replace(co_qualname=func.__qualname__)
    fdef.name = func.__name__
    return code, ast.unparse(fdef)


def _class_of(func):
    """The class name a method was defined in (for private-name mangling)."""
    parts = func.__qualname__.split(".")
    if len(parts) >= 2 and parts[-2] != "<locals>":
        return parts[-2]
    return None


def _walk_scope(stmts):
    """The nodes of `stmts`, not entering nested functions, classes or lambdas."""
    stack = list(stmts)
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                      ast.Lambda)):
                stack.append(child)


def _contains(stmts, kinds, into_loops=True):
    stack = list(stmts)
    while stack:
        node = stack.pop()
        if isinstance(node, kinds):
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if not into_loops and isinstance(node, (ast.For, ast.While, ast.AsyncFor)):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))
    return False


def _assigned_names(stmts):
    """Names a block binds (assignments, loop targets, with-as, defs, imports)."""
    names = []

    def add(name):
        if name not in names:
            names.append(name)

    for node in _walk_scope(stmts):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            add(node.name)
    # _walk_scope does not yield the defs it stops at: add those bound directly
    for node in ast.walk(ast.Module(body=list(stmts), type_ignores=[])):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            add(node.name)
            break
    return [n for n in names if not n.startswith("_lx_fn_")]


def _always_returns(stmts):
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    if isinstance(last, ast.If):
        return _always_returns(last.body) and _always_returns(last.orelse)
    return False


def _name(id_, store=False):
    return ast.Name(id=id_, ctx=ast.Store() if store else ast.Load())


def _ag(attr):
    return ast.Attribute(value=_name(_AG), attr=attr, ctx=ast.Load())


def _call(func, *args):
    return ast.Call(func=func, args=list(args), keywords=[])


def _assign(target, value):
    return ast.Assign(targets=[_name(target, store=True)], value=value)


def _lambda(body):
    return ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[],
                                         kw_defaults=[], defaults=[]), body=body)


class _Rewriter:
    """Rewrites one function's body in place (and the defs nested in it)."""

    def __init__(self, filename, owner):
        self.filename, self.owner, self.count = filename, owner, 0
        self.declared = {}   # global/nonlocal names -> "global"/"nonlocal": not state

    def where(self, node):
        return f"{self.filename}:{node.lineno}"

    def fresh(self, kind):
        self.count += 1
        return f"_lx_{kind}_{self.count}"

    # ---- pass 1: return / break / continue into flags ------------------------------

    def function(self, fdef):
        saved = self.declared
        self.declared = {n: "global" if isinstance(node, ast.Global) else "nonlocal"
                         for node in _walk_scope(fdef.body)
                         if isinstance(node, (ast.Global, ast.Nonlocal)) for n in node.names}
        if _contains([s for s in fdef.body if not isinstance(s, ast.Return)], ast.Return):
            self.ret = (self.fresh("do_return"), self.fresh("retval"))
            do_return, retval = self.ret
            body = [_assign(do_return, ast.Constant(False)),
                    _assign(retval, _call(_ag("Undefined"), ast.Constant("the return value"),
                                          ast.Constant(self.where(fdef))))]
            body += self.block(fdef.body, loop=None)
            body.append(ast.Return(value=_call(_ag("return_value"), _name(retval))))
        else:
            self.ret = None
            body = self.block(fdef.body, loop=None)
        fdef.body = [self.convert(s) for s in body]
        fdef.body = [s for stmt in fdef.body for s in (stmt if isinstance(stmt, list) else [stmt])]
        self.declared = saved
        if self.owner:
            _Mangler(self.owner).visit(fdef)

    def flags(self, loop):
        flags = []
        if self.ret is not None:
            flags.append(self.ret[0])
        if loop is not None:
            flags += [f for f in (loop.get("break"), loop.get("continue")) if f]
        return flags

    def exits(self, stmt, loop):
        if self.ret is not None and _contains([stmt], ast.Return):
            return True
        return loop is not None and _contains([stmt], (ast.Break, ast.Continue),
                                              into_loops=False)

    def guard(self, flags):
        test = None
        for f in flags:
            test = _name(f) if test is None else ast.BoolOp(op=ast.Or(),
                                                           values=[test, _name(f)])
        return ast.UnaryOp(op=ast.Not(), operand=test)

    def block(self, stmts, loop):
        out = []
        for i, stmt in enumerate(stmts):
            rest = stmts[i + 1:]
            exits = self.exits(stmt, loop)   # before stmt() rewrites its exits into flags
            consumed = False   # the statements after an `if` that returns moved into it
            if isinstance(stmt, ast.If) and rest and exits:
                if _always_returns(stmt.body) and not _always_returns(stmt.orelse):
                    stmt.orelse, consumed = stmt.orelse + rest, True
                elif _always_returns(stmt.orelse) and not _always_returns(stmt.body):
                    stmt.body, consumed = stmt.body + rest, True
            out += self.stmt(stmt, loop)
            if consumed:
                break
            if rest and exits:
                guarded = self.block(rest, loop)
                out.append(ast.copy_location(
                    ast.If(test=self.guard(self.flags(loop)), body=guarded, orelse=[]), stmt))
                break
        return out

    def stmt(self, stmt, loop):
        if isinstance(stmt, ast.Return) and self.ret is not None:
            value = stmt.value or ast.Constant(None)
            return [ast.copy_location(_assign(self.ret[1], value), stmt),
                    ast.copy_location(_assign(self.ret[0], ast.Constant(True)), stmt)]
        if isinstance(stmt, ast.Break) and loop is not None:
            return [ast.copy_location(_assign(loop["break"], ast.Constant(True)), stmt)]
        if isinstance(stmt, ast.Continue) and loop is not None:
            return [ast.copy_location(_assign(loop["continue"], ast.Constant(True)), stmt)]
        if isinstance(stmt, ast.If):
            stmt.body = self.block(stmt.body, loop) or [ast.Pass()]
            stmt.orelse = self.block(stmt.orelse, loop)
            return [stmt]
        if isinstance(stmt, (ast.While, ast.For)):
            return self.loop(stmt)
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            stmt.body = self.block(stmt.body, loop) or [ast.Pass()]
            return [stmt]
        if isinstance(stmt, ast.Try):
            stmt.body = self.block(stmt.body, loop) or [ast.Pass()]
            for handler in stmt.handlers:
                handler.body = self.block(handler.body, loop) or [ast.Pass()]
            stmt.orelse = self.block(stmt.orelse, loop)
            stmt.finalbody = self.block(stmt.finalbody, loop)
            return [stmt]
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            saved = self.ret
            self.function(stmt)
            self.ret = saved
            return [stmt]
        if isinstance(stmt, ast.AsyncFor):
            raise ConversionError(f"{self.where(stmt)}: autograph cannot convert `async for`")
        return [stmt]

    def loop(self, node):
        info = {}
        if _contains(node.body, ast.Break, into_loops=False):
            info["break"] = self.fresh("break")
        if _contains(node.body, ast.Continue, into_loops=False):
            info["continue"] = self.fresh("continue")
        before, body = [], []
        for kind in ("break", "continue"):
            if kind in info:
                before.append(ast.copy_location(_assign(info[kind], ast.Constant(False)), node))
        if "continue" in info:
            body.append(ast.copy_location(_assign(info["continue"], ast.Constant(False)), node))
        body += self.block(node.body, info)
        node.body = body or [ast.Pass()]
        stops = [info["break"]] if "break" in info else []
        # returns were lowered above: a body that sets the do_return flag stops the loop too
        if self.ret is not None and any(isinstance(n, ast.Name) and n.id == self.ret[0]
                                        and isinstance(n.ctx, ast.Store)
                                        for n in _walk_scope(node.body)):
            stops = [self.ret[0]] + ([info["break"]] if "break" in info else [])
        node._lx_stop = self.guard(stops) if stops else None
        after = []
        if node.orelse:
            orelse = self.block(node.orelse, None)
            after = ([ast.copy_location(ast.If(test=self.guard(stops), body=orelse, orelse=[]),
                                        node)] if stops else orelse)
            node.orelse = []
        return before + [node] + after

    # ---- pass 2: if / while / for / x if c else y into helper calls -----------------

    def convert(self, stmt):
        """`stmt` with its control flow (and that nested inside) converted; a list."""
        if isinstance(stmt, ast.If):
            return self.convert_if(stmt)
        if isinstance(stmt, ast.While):
            return self.convert_while(stmt)
        if isinstance(stmt, ast.For):
            return self.convert_for(stmt)
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            stmt.body = self.convert_block(stmt.body)
        elif isinstance(stmt, ast.Try):
            stmt.body = self.convert_block(stmt.body)
            for handler in stmt.handlers:
                handler.body = self.convert_block(handler.body)
            stmt.orelse = self.convert_block(stmt.orelse)
            stmt.finalbody = self.convert_block(stmt.finalbody)
        _IfExps(self).visit(stmt)
        return [stmt]

    def convert_block(self, stmts):
        return [s for stmt in stmts for s in self.convert(stmt)]

    def state(self, stmts):
        return [n for n in _assigned_names(stmts) if n not in self.declared]

    def inner_def(self, name, params, body, returns, node):
        bound = set(_assigned_names(body))
        declared = [(ast.Global if kind == "global" else ast.Nonlocal)(names=[n])
                    for n, kind in self.declared.items() if n in bound]
        body = declared + self.convert_block(body)
        body.append(ast.Return(value=ast.Tuple(elts=[_name(n) for n in returns], ctx=ast.Load())))
        return ast.copy_location(ast.FunctionDef(
            name=name, args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=p) for p in params],
                                          kwonlyargs=[], kw_defaults=[], defaults=[]),
            body=body, decorator_list=[], returns=None, type_params=[]), node)

    def current(self, names):
        return _call(_ag("ld"), _call(_name("locals")),
                     ast.Tuple(elts=[ast.Constant(n) for n in names], ctx=ast.Load()))

    def bind(self, names, value, node):
        if not names:
            return ast.copy_location(ast.Expr(value=value), node)
        target = ast.Tuple(elts=[_name(n, store=True) for n in names], ctx=ast.Store())
        return ast.copy_location(ast.Assign(targets=[target], value=value), node)

    def meta(self, names, node):
        return [ast.Tuple(elts=[ast.Constant(n) for n in names], ctx=ast.Load()),
                ast.Constant(self.where(node))]

    def convert_if(self, node):
        names = self.state(node.body + node.orelse)
        true_fn, false_fn = self.fresh("if_true"), self.fresh("if_false")
        defs = [self.inner_def(true_fn, names, node.body, names, node),
                self.inner_def(false_fn, names, node.orelse or [ast.Pass()], names, node)]
        call = _call(_ag("if_stmt"), _Conditions(self).test(node.test), _name(true_fn),
                     _name(false_fn), self.current(names), *self.meta(names, node))
        return defs + [self.bind(names, call, node)]

    def convert_while(self, node):
        names = self.state(node.body)
        test, body = self.fresh("while_test"), self.fresh("while_body")
        condition = node.test
        if node._lx_stop is not None:
            condition = ast.BoolOp(op=ast.And(), values=[node._lx_stop, condition])
        test_def = ast.copy_location(ast.FunctionDef(
            name=test, args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=p) for p in names],
                                          kwonlyargs=[], kw_defaults=[], defaults=[]),
            body=[ast.Return(value=_Conditions(self).test(condition))], decorator_list=[],
            returns=None, type_params=[]), node)
        defs = [test_def, self.inner_def(body, names, node.body, names, node)]
        call = _call(_ag("while_stmt"), _name(test), _name(body), self.current(names),
                     *self.meta(names, node))
        return defs + [self.bind(names, call, node)]

    def convert_for(self, node):
        names = self.state(node.body + [ast.Assign(targets=[node.target], value=ast.Constant(0))])
        item, body, stop = "_lx_item", self.fresh("for_body"), self.fresh("for_stop")
        unpack = ast.copy_location(ast.Assign(targets=[node.target], value=_name(item)), node)
        defs = [self.inner_def(body, [item] + names, [unpack] + node.body, names, node)]
        if node._lx_stop is not None:
            defs.append(ast.copy_location(ast.FunctionDef(
                name=stop, args=ast.arguments(posonlyargs=[],
                                              args=[ast.arg(arg=p) for p in names],
                                              kwonlyargs=[], kw_defaults=[], defaults=[]),
                body=[ast.Return(value=_Conditions(self).test(node._lx_stop))],
                decorator_list=[], returns=None, type_params=[]), node))
            keep_going = _name(stop)
        else:
            keep_going = ast.Constant(None)
        iterable = node.iter
        if isinstance(iterable, ast.Call) and not any(isinstance(a, ast.Starred)
                                                      for a in iterable.args):
            iterable = ast.Call(func=_ag("for_iterable"), args=[iterable.func] + iterable.args,
                                keywords=iterable.keywords)
        _IfExps(self).visit(iterable)
        call = _call(_ag("for_stmt"), iterable, _name(body), keep_going, self.current(names),
                     *self.meta(names, node))
        return defs + [self.bind(names, call, node)]


class _Conditions:
    """A condition with `and`/`or`/`not` as lazy helper calls (a traced operand
    cannot be a Python bool)."""

    def __init__(self, rewriter):
        self.rewriter = rewriter

    def test(self, node):
        if isinstance(node, ast.BoolOp):
            helper = "and_" if isinstance(node.op, ast.And) else "or_"
            return ast.copy_location(_call(_ag(helper), *[_lambda(self.test(v))
                                                         for v in node.values]), node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return ast.copy_location(_call(_ag("not_"), self.test(node.operand)), node)
        _IfExps(self.rewriter).visit(node)
        return node


# calls that must stay direct: they look at the calling frame
_FRAME_BUILTINS = {"super", "locals", "globals", "vars", "eval", "exec", "dir"}


class _IfExps(ast.NodeTransformer):
    """`a if c else b` -> `if_exp(c, lambda: a, lambda: b, where)`, and `f(...)` ->
    `call(f, ...)` (which converts the user functions it calls), outside nested
    defs and lambdas."""

    def __init__(self, rewriter):
        self.rewriter = rewriter

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if (isinstance(func, ast.Name) and func.id in _FRAME_BUILTINS) or (
                isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                and func.value.id == _AG):
            return node
        return ast.copy_location(ast.Call(func=_ag("call"), args=[func] + node.args,
                                          keywords=node.keywords), node)

    def visit_IfExp(self, node):
        self.generic_visit(node)
        return ast.copy_location(_call(
            _ag("if_exp"), _Conditions(self.rewriter).test(node.test), _lambda(node.body),
            _lambda(node.orelse), ast.Constant(self.rewriter.where(node))), node)

    def visit_FunctionDef(self, node):
        return node

    visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = visit_FunctionDef


class _Mangler(ast.NodeTransformer):
    """Private names (`self.__x`) as the class body would have compiled them."""

    def __init__(self, owner):
        self.prefix = "_" + owner.lstrip("_")

    def _mangle(self, name):
        if name.startswith("__") and not name.endswith("__"):
            return self.prefix + name
        return name

    def visit_Attribute(self, node):
        self.generic_visit(node)
        node.attr = self._mangle(node.attr)
        return node

    def visit_Name(self, node):
        node.id = self._mangle(node.id)
        return node


# --------------------------------------------------------------------------
# Run time
# --------------------------------------------------------------------------

class Undefined:
    """The value of a variable that is not defined on the path taken (assigned in
    one branch only, or only inside a loop on a traced value)."""

    __slots__ = ("name", "where")

    def __init__(self, name, where=None):
        self.name, self.where = name, where

    def _fail(self, *args, **kwargs):
        place = f" by the statement at {self.where}" if self.where else ""
        raise UnboundLocalError(
            f"{self.name!r} is used but was left undefined{place}: inside a loopax.function "
            "(tf.function) a variable assigned in only one branch of an `if` on a traced "
            "value, or only inside a loop on one, has no value afterwards. Assign it "
            "before the `if`/loop (or in both branches).")

    __bool__ = __int__ = __float__ = __index__ = __len__ = __iter__ = __call__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _fail
    __rtruediv__ = __floordiv__ = __mod__ = __pow__ = __neg__ = __getitem__ = _fail
    __lt__ = __le__ = __gt__ = __ge__ = __matmul__ = __rmatmul__ = __array__ = _fail
    __jax_array__ = _fail

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        self._fail()

    def __repr__(self):
        return f"<undefined {self.name}>"


_LIBRARIES = tuple(os.path.join(p, "") for p in {
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))),   # loopax itself
    *(sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib"))})
_calls = weakref.WeakKeyDictionary()   # user function -> its conversion


def _user_function(func):
    filename = func.__code__.co_filename
    return not filename.startswith("<") and not os.path.abspath(filename).startswith(_LIBRARIES)


def call(func, *args, **kwargs):
    """`func(*args, **kwargs)`; a user function (not loopax's, the standard
    library's or an installed package's) is converted first, as tf.function
    converts the functions it calls."""
    target = func
    plain = func.__func__ if isinstance(func, types.MethodType) else func
    if type(plain) is types.FunctionType and _user_function(plain):
        converted = _calls.get(plain)
        if converted is None:
            converted = _calls[plain] = convert(plain)
        if converted is not plain:
            target = (types.MethodType(converted, func.__self__)
                      if isinstance(func, types.MethodType) else converted)
    return target(*args, **kwargs)


def ld(scope, names):
    """The current values of `names` in a function's `locals()` (Undefined if unbound)."""
    return tuple(scope[n] if n in scope else Undefined(n) for n in names)


def return_value(value):
    if isinstance(value, Undefined):
        if value.where is not None and value.name == "the return value":
            return None
        value._fail()
    return value


def _array(x):
    if isinstance(x, Tensor):
        return x._loopax_value
    if isinstance(x, Variable):
        return x.value
    return x


def _traced(x):
    return is_tracer(_array(x))


def _as_tensor_like(x, like_tensor):
    return Tensor(x) if like_tensor else x


def _predicate(test, where, what):
    pred = _array(test)
    if np.shape(pred) != ():
        raise ValueError(
            f"{where}: the condition of this {what} is a traced value of shape "
            f"{tuple(np.shape(pred))}; inside a loopax.function (tf.function) it must be "
            "one boolean: reduce it with tf.reduce_all / tf.reduce_any (ops.all / ops.any).")
    return pred if pred.dtype == jnp.bool_ else pred != 0


def not_(x):
    if _traced(x):
        return Tensor(jnp.logical_not(_array(x)))
    return not x


def and_(*thunks):
    value = True
    for i, thunk in enumerate(thunks):
        value = thunk()
        if _traced(value):
            rest = and_(*thunks[i + 1:]) if i + 1 < len(thunks) else True
            return Tensor(jnp.logical_and(_array(value), _array(rest)))
        if not value:
            return value
    return value


def or_(*thunks):
    value = False
    for i, thunk in enumerate(thunks):
        value = thunk()
        if _traced(value):
            rest = or_(*thunks[i + 1:]) if i + 1 < len(thunks) else False
            return Tensor(jnp.logical_or(_array(value), _array(rest)))
        if value:
            return value
    return value


def _recording():
    return bool(_state.tapes)


# ---- the state of a statement: array leaves and static parts ----------------------

_NUMBERS = (bool, int, float, complex, np.number, np.bool_)


def _is_leaf(x):
    return isinstance(x, (Tensor, Variable, Undefined))


class _Flat:
    """A tuple of state values split into arrays (carried) and everything else."""

    def __init__(self, values):
        self.leaves, self.treedef = jax.tree_util.tree_flatten(list(values), is_leaf=_is_leaf)
        self.carried = [i for i, x in enumerate(self.leaves) if _carried(x)]
        self.tensor = [isinstance(self.leaves[i], Tensor) for i in self.carried]

    def arrays(self):
        return [jnp.asarray(_array(self.leaves[i])) for i in self.carried]

    def build(self, arrays, tensor=None):
        leaves = list(self.leaves)
        for k, (i, a) in enumerate(zip(self.carried, arrays)):
            leaves[i] = _as_tensor_like(a, (tensor or self.tensor)[k])
        return tuple(jax.tree_util.tree_unflatten(self.treedef, leaves))


def _carried(x):
    if isinstance(x, (Tensor, jax.Array, np.ndarray)) or isinstance(x, _NUMBERS):
        return True
    return False


def _leaf_names(values, names):
    """A name for each leaf of `values` (`x`, `x[1]`, ...), for messages."""
    out = []
    for name, value in zip(names, values):
        paths = jax.tree_util.tree_flatten_with_path(value, is_leaf=_is_leaf)[0]
        for path, _ in paths:
            out.append(name + jax.tree_util.keystr(path))
    return out


def _same_static(a, b):
    if a is b:
        return True
    try:
        return bool(a == b) if not isinstance(a, (Undefined, Variable)) else False
    except Exception:
        return False


class _BranchScope(StateScope):
    """The scope of one branch or loop body. Reads fall through to the enclosing
    scopes, except an RNG seed state's: its first read is kept here, so the draw's
    assignment lands here too (assignments of a seed state go to the innermost
    scope that maps it) and is carried out of the branch or loop like any other."""

    def _lookup(self, var):
        hit = self._values.get(id(var))
        if hit is not None:
            return hit[1]
        if not var.is_seed_state:
            return None
        value = None
        for scope in reversed(_state.scopes):
            if scope is not self:
                value = scope._lookup(var)
                if value is not None:
                    break
        value = var._value if value is None else value
        self._values[id(var)] = (var, value)
        return value


class _Run:
    """One trace of a branch or loop body: `fn(*state)` under a StateScope that
    maps `variables` to `values` (and the global seed state), as a closed jaxpr."""

    def __init__(self, fn, flat, variables, arrays_in, where):
        self.fn, self.flat, self.variables, self.where = fn, flat, list(variables), where
        self.out = None

        def run(var_values, arrays):
            with _BranchScope(list(zip(self.variables, var_values))) as scope:
                out = fn(*flat.build(arrays))
            self.out, self.out_values = _Flat(out), tuple(out)
            self.assigned = [v for v in scope.assigned_variables]
            return self.out.arrays(), [scope.get_current_value(v) for v in self.assigned]

        self.closed = jax.make_jaxpr(run)([v.value for v in self.variables], arrays_in)
        self.n_out = len(self.out.carried)

    def __call__(self, var_values, arrays):
        flat = jax.core.eval_jaxpr(self.closed.jaxpr, self.closed.consts,
                                   *var_values, *arrays)
        return flat[:self.n_out], flat[self.n_out:]


def _loop_init(before, after):
    """`before` as a lax loop must carry it, given its value `after` one iteration
    (an object may define `_autograph_loop_init`, as TensorArray does)."""
    init = getattr(before, "_autograph_loop_init", None)
    return before if init is None else init(after)


def _error(where, message):
    return ValueError(f"{where}: {message}")


# ---- if --------------------------------------------------------------------------

def if_stmt(test, true_fn, false_fn, state, names, where):
    """`true_fn(*state)` if `test` else `false_fn(*state)`; a traced `test` is `lax.cond`."""
    if not _traced(test):
        return true_fn(*state) if test else false_fn(*state)
    pred = _predicate(test, where, "`if`")
    flat = _Flat(state)
    arrays = flat.arrays()
    if _recording():
        return _select_branches(pred, true_fn, false_fn, flat, arrays, names, where)
    runs = [_Run(fn, flat, [], arrays, where) for fn in (true_fn, false_fn)]
    return _merge_cond(pred, runs, arrays, names, where)


def _merge_cond(pred, runs, arrays_in, names, where):
    true, false = runs
    a, b = true.out, false.out
    label = names if names else ("the value",)
    if a.treedef != b.treedef:
        raise _error(where, f"the branches of this `if` on a traced value leave "
                     f"{', '.join(label)} with different structures ({a.treedef} and "
                     f"{b.treedef}); both branches must give them the same structure.")
    leaf_names = _leaf_names(true.out_values, names)
    out_leaves, carried_a, carried_b = [], [], []
    for i, (x, y) in enumerate(zip(a.leaves, b.leaves)):
        name = leaf_names[i] if i < len(leaf_names) else "a value"
        if _carried(x) and _carried(y):
            carried_a.append(a.carried.index(i))
            carried_b.append(b.carried.index(i))
            out_leaves.append(None)
        elif isinstance(x, Undefined) or isinstance(y, Undefined):
            defined = y if isinstance(x, Undefined) else x
            if (isinstance(x, Undefined) != isinstance(y, Undefined)
                    and name.startswith("_lx_retval")):
                raise _error(where, "this `if` on a traced value returns from the function "
                             "in one branch but not in the other; every path must return a "
                             "value of the same structure (add an `else: return ...`; inside a "
                             "loop on a traced value, set a variable, `break`, and return "
                             "after the loop), as tf.function requires.")
            del defined
            out_leaves.append(Undefined(name, where))
        elif _same_static(x, y):
            out_leaves.append(x)
        else:
            raise _error(where, f"{name!r} is {x!r} in one branch of this `if` on a traced "
                         f"value and {y!r} in the other; a value that is not a tensor must "
                         "be the same in both branches (or make it a tensor).")
    xs_a, xs_b = [true.closed.out_avals[k] for k in carried_a], [false.closed.out_avals[k]
                                                                  for k in carried_b]
    for k, (u, v) in enumerate(zip(xs_a, xs_b)):
        if u.shape != v.shape:
            name = leaf_names[[i for i, x in enumerate(out_leaves) if x is None][k]]
            raise _error(where, f"{name!r} has shape {u.shape} in one branch of this `if` on "
                         f"a traced value and {v.shape} in the other; both branches must "
                         "give it the same shape.")
    dtypes = [jnp.promote_types(u.dtype, v.dtype) for u, v in zip(xs_a, xs_b)]
    assigned = list(true.assigned) + [v for v in false.assigned
                                      if all(v is not w for w in true.assigned)]
    current = [v.value for v in assigned]

    def branch(run, picks):
        def f():
            outs, new = run([], arrays_in)
            arrays = [jnp.asarray(outs[k]).astype(d) for k, d in zip(picks, dtypes)]
            values = []
            for var, cur in zip(assigned, current):
                hit = [n for w, n in zip(run.assigned, new) if w is var]
                values.append(hit[0] if hit else cur)
            return arrays, values
        return f

    arrays, new_values = jax.lax.cond(pred, branch(true, carried_a), branch(false, carried_b))
    for var, value in zip(assigned, new_values):
        var.assign(value)
    tensor = [a.tensor[a.carried.index(i)] or b.tensor[b.carried.index(i)]
              for i, x in enumerate(out_leaves) if x is None]
    it = iter(zip(arrays, tensor))
    leaves = []
    for x in out_leaves:
        if x is None:
            array, is_tensor = next(it)
            leaves.append(_as_tensor_like(array, is_tensor))
        else:
            leaves.append(x)
    return tuple(jax.tree_util.tree_unflatten(a.treedef, leaves))


def _select_branches(pred, true_fn, false_fn, flat, arrays, names, where):
    """While a GradientTape records: both branches run, joined by `where` (the tape
    can differentiate that; as `loopax.ops.cond`)."""
    results = []
    for fn in (true_fn, false_fn):
        with _BranchScope() as scope:
            out = fn(*flat.build(arrays))
        results.append((out, scope))
    (a, sa), (b, sb) = results

    def pick(x, y):
        if isinstance(x, Undefined) or isinstance(y, Undefined):
            return x if isinstance(y, Undefined) and isinstance(x, Undefined) else Undefined(
                getattr(x, "name", getattr(y, "name", "a value")), where)
        if _carried(x) and _carried(y):
            return ops_numpy.where(Tensor(pred), x, y)
        if _same_static(x, y):
            return x
        raise _error(where, f"a value is {x!r} in one branch of this `if` on a traced value "
                     f"and {y!r} in the other; make it a tensor or the same in both.")

    out = jax.tree_util.tree_map(pick, list(a), list(b), is_leaf=_is_leaf)
    for var in list(sa.assigned_variables) + [
            v for v in sb.assigned_variables if all(v is not w for w in sa.assigned_variables)]:
        new_a, new_b = sa.get_current_value(var), sb.get_current_value(var)
        new_a = var.value if new_a is None else new_a
        new_b = var.value if new_b is None else new_b
        var.assign(jnp.where(_array(pred), new_a, new_b))
    return tuple(out)


def if_exp(test, body, orelse, where):
    """`body() if test else orelse()`; a traced `test` is `lax.cond`."""
    if not _traced(test):
        return body() if test else orelse()
    out = if_stmt(test, lambda: (body(),), lambda: (orelse(),), (), ("the expression",), where)
    return out[0]


# ---- while -----------------------------------------------------------------------

def while_stmt(test_fn, body_fn, state, names, where):
    """`while test_fn(*state): state = body_fn(*state)`; runs as Python while the
    condition is a Python value, and as `lax.while_loop` once it is traced."""
    while True:
        keep_going = test_fn(*state)
        if _traced(keep_going):
            return _lax_loop(lambda s: test_fn(*s), lambda s: body_fn(*s), state, names, where,
                             "while")
        if not keep_going:
            return state
        state = body_fn(*state)


def _lax_loop(test, body, state, names, where, kind, count=None):
    """The loop `while test(state): state = body(state)` as `lax.while_loop`, or,
    with a Python int `count` (and `test` only counting), `lax.fori_loop(0, count)`
    (which JAX can reverse-differentiate)."""
    state = tuple(state)
    defined = [i for i, x in enumerate(state) if not isinstance(x, Undefined)]
    local = [i for i, x in enumerate(state) if isinstance(x, Undefined)]
    carried_names = [names[i] for i in defined]

    def full(values):
        full_state = list(state)
        for i, v in zip(defined, values):
            full_state[i] = v
        return tuple(full_state)

    def step(*values):
        out = body(full(values))
        for i in local:
            if names[i].startswith("_lx_retval") and not isinstance(out[i], Undefined):
                raise _error(where, "a `return` inside this loop on a traced value (a "
                             f"`{kind}` that compiles to a lax loop) cannot be converted, as in "
                             "tf.function: set a variable and `break`, and return after the "
                             "loop.")
        return tuple(out[i] for i in defined)

    state_defined = [state[i] for i in defined]
    flat = _Flat(state_defined)
    arrays = [jax.lax.convert_element_type(a, a.dtype) for a in flat.arrays()]   # not weak
    leaf_names = _leaf_names(state_defined, carried_names)
    variables = []
    for _ in range(4):   # until the assigned Variables and the dtypes settle
        run = _Run(step, flat, variables, arrays, where)
        out = run.out
        grown = [_loop_init(x, y) for x, y in zip(state_defined, run.out_values)]
        if any(g is not x for g, x in zip(grown, state_defined)):
            # e.g. a TensorArray first written in the loop: its buffer's shape is known now
            state_defined = grown
            flat = _Flat(state_defined)
            arrays = [jax.lax.convert_element_type(a, a.dtype) for a in flat.arrays()]
            leaf_names = _leaf_names(state_defined, carried_names)
            continue
        if out.treedef != flat.treedef or len(out.carried) != len(flat.carried) or any(
                _carried(x) != _carried(y) for x, y in zip(out.leaves, flat.leaves)):
            raise _error(where, f"this `{kind}` loop on a traced value changes the structure "
                         f"of {', '.join(carried_names) or 'its state'} (e.g. a Python value "
                         "becoming a tensor, or a list growing); a loop variable must keep "
                         "its structure, shape and dtype from one iteration to the next.")
        for x, y, name in zip(out.leaves, flat.leaves, leaf_names):
            if not _carried(x) and not _same_static(x, y):
                raise _error(where, f"{name!r} changes from {y!r} to {x!r} in this `{kind}` "
                             "loop on a traced value; only tensors can change in the loop.")
        new_arrays, changed = [], False
        for k, (a, aval) in enumerate(zip(arrays, run.closed.out_avals[:run.n_out])):
            name = leaf_names[flat.carried[k]]
            if tuple(a.shape) != tuple(aval.shape):
                raise _error(where, f"{name!r} has shape {tuple(a.shape)} before this `{kind}` "
                             f"loop on a traced value and shape {tuple(aval.shape)} after one "
                             "iteration; a loop variable must keep its shape (XLA compiles "
                             "static shapes): pad it to its final size before the loop, or "
                             "collect values in a tf.TensorArray.")
            dtype = jnp.promote_types(a.dtype, aval.dtype)
            if dtype != a.dtype:
                a, changed = a.astype(dtype), True
            new_arrays.append(a)
        assigned = [v for v in run.assigned if all(v is not w for w in variables)]
        if not changed and not assigned:
            break
        arrays, variables = new_arrays, variables + assigned
    else:
        raise _error(where, f"the state of this `{kind}` loop does not settle to fixed dtypes.")
    tensor = [x or y for x, y in zip(flat.tensor, out.tensor)]

    def cond_fn(carry):
        var_values, values = carry
        with _BranchScope(list(zip(variables, var_values))):
            keep = test(full(flat.build(values, tensor)))
        return _predicate(keep, where, f"`{kind}` loop")

    def body_fn(carry):
        var_values, values = carry
        outs, new = run(var_values, values)
        by_var = dict(zip(map(id, run.assigned), new))
        return ([by_var.get(id(v), old) for v, old in zip(variables, var_values)],
                [jnp.asarray(o).astype(a.dtype) for o, a in zip(outs, arrays)])

    init = ([v.value for v in variables], arrays)
    if count is not None:
        var_values, values = jax.lax.fori_loop(0, count, lambda _, carry: body_fn(carry), init)
    else:
        var_values, values = jax.lax.while_loop(cond_fn, body_fn, init)
    for var, value in zip(variables, var_values):
        var.assign(value)
    result = list(full(flat.build(values, tensor)))
    for i in local:
        result[i] = Undefined(names[i], where)
    return tuple(result)


# ---- for -------------------------------------------------------------------------

class _Range:
    """`range(start, limit, delta)` / `tf.range(...)` inside a loopax.function:
    a lax loop over a counter (a traced bound, or tf.range's tensor)."""

    def __init__(self, start, limit, delta, dtype, tensor):
        self.start, self.limit, self.delta = start, limit, delta
        self.dtype, self.tensor = dtype, tensor


def _is_tf_range(func):
    return getattr(func, "__module__", "").startswith("loopax.") and getattr(
        func, "__name__", "") == "range"


def for_iterable(func, *args, **kwargs):
    """The iterable of a `for`: a `range`/`tf.range` call becomes a counted lax
    loop when a bound is traced (or, tf.range, while a function is traced)."""
    is_range = func is builtins.range or _is_tf_range(func)
    if not is_range:
        return func(*args, **kwargs)
    traced = any(_traced(a) for a in list(args) + list(kwargs.values()))
    if not traced and (func is builtins.range or not tracing()):
        return func(*args, **kwargs)
    if func is builtins.range:
        if kwargs:
            return func(*args, **kwargs)
        start, limit, delta = (0, args[0], 1) if len(args) == 1 else (*args, 1)[:3]
        return _Range(start, limit, delta, jnp.int32, tensor=False)
    params = inspect.signature(func).bind(*args, **kwargs).arguments
    start, limit = params.get("start"), params.get("limit")
    delta, dtype = params.get("delta", 1), params.get("dtype")
    if limit is None:
        start, limit = 0, start
    if dtype is None:
        floating = any(jnp.issubdtype(jnp.result_type(_array(v)), jnp.floating)
                       for v in (start, limit, delta))
        dtype = jnp.float32 if floating else jnp.int32
    # the counter is a plain array (not a Tensor): it also indexes a jax.Array
    return _Range(start, limit, delta, jnp.dtype(dtype), tensor=False)


def for_stmt(iterable, body_fn, keep_going, state, names, where):
    """`for item in iterable: state = body_fn(item, *state)` (stopping early when
    `keep_going(*state)` is false): a lax loop over a `_Range` or a traced
    Tensor's first axis, a Python loop over anything else."""
    if isinstance(iterable, _Range):
        return _for_range(iterable, body_fn, keep_going, state, names, where)
    array = _array(iterable) if isinstance(iterable, (Tensor, Variable, jax.Array)) else None
    if array is not None and is_tracer(array):
        if np.ndim(array) == 0:
            raise _error(where, "this `for` iterates over a scalar tensor; iterate over a "
                         "tensor with at least one axis.")
        is_tensor = isinstance(iterable, (Tensor, Variable))
        return _for_counted(0, array.shape[0], 1, lambda i: _as_tensor_like(
            array[i], is_tensor), body_fn, keep_going, state, names, where)
    for item in iterable:
        if keep_going is not None:
            keep = keep_going(*state)
            if _traced(keep):
                state = if_stmt(keep, functools.partial(body_fn, item),
                                lambda *s: s, state, names, where)
                continue
            if not keep:
                break
        state = body_fn(item, *state)
    return state


def _for_range(r, body_fn, keep_going, state, names, where):
    dtype = r.dtype

    def item(i):
        value = jnp.asarray(_array(r.start), dtype) + i.astype(dtype) * jnp.asarray(
            _array(r.delta), dtype)
        return _as_tensor_like(value, r.tensor)

    bounds = [_array(v) for v in (r.start, r.limit, r.delta)]
    if not any(is_tracer(b) for b in bounds):
        start, limit, delta = (np.asarray(b).item() for b in bounds)
        if delta == 0:
            raise _error(where, "range() arg 3 (delta) must not be zero")
        count = builtins.max(0, -(-(limit - start) // delta))
        return _for_counted(0, int(count), 1, item, body_fn, keep_going, state, names, where)
    start, limit, delta = (jnp.asarray(b, dtype) for b in bounds)
    count = jnp.maximum(jnp.ceil((limit - start) / delta), 0).astype(jnp.int32) if jnp.issubdtype(
        dtype, jnp.floating) else jnp.maximum((limit - start + delta - jnp.sign(delta)) // delta,
                                              0).astype(jnp.int32)
    return _for_counted(0, count, 1, item, body_fn, keep_going, state, names, where)


def _for_counted(start, count, _, item, body_fn, keep_going, state, names, where):
    """`for i in range(count)` over `item(i)` as a lax loop (count static or traced)."""
    if _recording() and not is_tracer(count):
        for i in range(int(count)):
            if keep_going is not None:
                keep = keep_going(*state)
                if _traced(keep):
                    state = if_stmt(keep, functools.partial(body_fn, item(jnp.asarray(i))),
                                    lambda *s: s, state, names, where)
                    continue
                if not keep:
                    break
            state = body_fn(item(jnp.asarray(i)), *state)
        return state
    index = "_lx_index"
    full_names = (index,) + tuple(names)

    def test(s):
        i, rest = s[0], s[1:]
        below = _array(i) < count
        if keep_going is None:
            return below
        keep = keep_going(*rest)
        return jnp.logical_and(below, _array(keep))

    def body(s):
        i, rest = s[0], s[1:]
        return (i + 1,) + tuple(body_fn(item(_array(i)), *rest))

    static = None if is_tracer(count) or keep_going is not None else int(count)
    out = _lax_loop(test, body, (jnp.asarray(0, jnp.int32),) + tuple(state), full_names, where,
                    "for", count=static)
    return out[1:]

