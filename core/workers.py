"""Process lifetime of the command line: SIGTERM, SIGINT and SIGHUP end a run as Ctrl-C does (the exception
unwinds, output sessions roll back their staged `.part` files, exit handlers remove temporary folders), and a
pool of worker processes in which workers die with their parent and a worker that dies fails only the input
it was working on (concurrent.futures marks its whole pool broken instead)."""
from __future__ import annotations

import contextlib
import ctypes
import functools
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections import deque
from multiprocessing.connection import wait
from typing import Any, Callable, Iterator

from . import fileio
from .fileio import current_session

_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGINT", "SIGHUP") if hasattr(signal, name))
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


class Terminated(KeyboardInterrupt):
    """A signal asked the process to stop; unwinds like Ctrl-C (`except Exception` does not catch it)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_status(self) -> int:
        return 128 + self.signum


class WorkerDied(RuntimeError):
    """The worker process that ran an input ended without a result (killed, crashed, out of memory); `pid` the
    process (its staged files are left for the caller to remove: core/fileio.py remove_staged)."""

    def __init__(self, message: str, pid: int | None = None):
        super().__init__(message)
        self.pid = pid


_signalled: int | None = None  # the first signal of the running block
_in_worker = False


def _stop(signum: int, frame) -> None:
    global _signalled
    if _signalled is not None:  # a second signal must not interrupt the cleanup the first one started
        return
    _signalled = signum
    session = current_session()
    if _in_worker and (session is None or not (session.staged or session.created)):
        # Nothing of this worker's to undo (its Blender folder is the parent's): end now, not after the Blender
        # call running now returns (an exception raised inside an import can also come out as an ImportError).
        os._exit(128 + signum)
    if _inside_handler(frame):
        return  # left for the next `check_stop`: Blender would print the exception as a traceback and drop it
    raise Terminated(signum)


def _inside_handler(frame) -> bool:
    """Whether the interrupted Python code runs inside a `quiet_stop` function (the signal can land on the
    wrapper's first instruction, before its `try`)."""
    while frame is not None:
        if frame.f_code is _HANDLER_CODE:
            return True
        frame = frame.f_back
    return False


def quiet_stop(fn):
    """For a function Blender calls itself (an app handler): a signal arriving inside it is left for the next
    `check_stop` (its flag stays set) instead of coming out as a traceback Blender prints and drops."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Terminated:  # raised by code that calls `check_stop` inside the handler
            return None
    return run


_HANDLER_CODE = quiet_stop(lambda: None).__code__


def check_stop() -> None:
    """Raise `Terminated` if a signal arrived in this block (its exception may have been turned into another
    one by the code it interrupted)."""
    if _signalled is not None:
        raise Terminated(_signalled)


def block_signals() -> None:
    """Hold SIGTERM, SIGINT and SIGHUP pending in this thread (and in the threads it starts) until
    `signals_stop` takes them: the command line's first statement, so that a signal during start-up (imports,
    Blender loading) is neither a traceback nor an exception turned into another by the code it interrupted."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)


def release_signals() -> None:
    """Take the signals `block_signals` held: one that arrived raises `Terminated` here."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)
    check_stop()


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Signals held pending for the block (loading Blender and registering the add-on: an exception raised
    inside them comes out as ImportError or leaves Blender half set up, which can crash at exit); one that
    arrived is taken as the block ends, raising `Terminated` there."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
    check_stop()


fileio.commit_checks.append(check_stop)


@contextlib.contextmanager
def signals_stop() -> Iterator[None]:
    """Within the block, SIGTERM, SIGINT and SIGHUP raise `Terminated`; the previous handlers come back after
    it. Signals held since `block_signals` stay held until `release_signals` (called inside the block, where the
    caller handles `Terminated`). Does nothing outside the main thread (Python delivers signals there only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    global _signalled
    _signalled = None
    saved = {s: signal.getsignal(s) for s in _SIGNALS}
    for s in _SIGNALS:
        if saved[s] is not signal.SIG_IGN:  # nohup's ignored SIGHUP stays ignored
            signal.signal(s, _stop)
    try:
        yield
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)


def _die_with_parent(parent_pid: int) -> None:
    """Ask Linux to send this process SIGTERM when its parent ends; a parent already gone ends it now."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        except (OSError, AttributeError):  # no libc symbol: the parent's own cleanup still terminates us
            pass
    if os.getppid() != parent_pid:
        os._exit(128 + signal.SIGTERM)


def _worker_main(conn, fn: Callable[..., Any], parent_pid: int) -> None:
    """A worker's loop: (index, args) in, (index, result) out, until None or the parent's end."""
    global _in_worker
    _in_worker = True
    _die_with_parent(parent_pid)
    with signals_stop():
        try:
            release_signals()
            while True:
                task = conn.recv()
                if task is None:
                    return
                index, args = task
                try:
                    result = fn(*args)
                except Exception as e:  # fn's own fault: this input fails, the worker goes on
                    result = WorkerDied(f"{type(e).__name__}: {e}")
                check_stop()
                # A signal between the result and its delivery would leave a finished output unreported.
                signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
                try:
                    conn.send((index, result))
                finally:
                    signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)
        except Terminated as e:
            sys.exit(e.exit_status)
        except (EOFError, BrokenPipeError):  # the parent is gone
            sys.exit(1)


class _Worker:
    def __init__(self, ctx, fn: Callable[..., Any]):
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(child, fn, os.getpid()), daemon=True)
        self.proc.start()
        child.close()
        self.task: int | None = None

    def give(self, index: int, args: tuple) -> None:
        self.task = index
        self.conn.send((index, args))

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.conn.send(None)


def _receive(worker: _Worker) -> tuple[int, Any] | None:
    """The worker's result if one arrived, else None."""
    try:
        if worker.conn.poll():
            return worker.conn.recv()
    except (EOFError, OSError):
        pass
    return None


def run_pool(fn: Callable[..., Any], tasks: list[tuple], jobs: int,
             on_result: Callable[[int, Any], None]) -> None:
    """`fn(*tasks[i])` for every i in `jobs` spawned processes (each runs many inputs); `on_result(i, result)` in
    the order they finish, result a `WorkerDied` when the process running it ended without one (a new worker
    takes the remaining inputs). A signal (see `signals_stop`) terminates every worker; the results that
    arrived before they ended are still reported, then the exception goes on."""
    ctx = multiprocessing.get_context("spawn")
    pending = deque(enumerate(tasks))
    workers: list[_Worker] = []
    try:
        while pending or any(w.task is not None for w in workers):
            while pending and len(workers) < jobs:
                workers.append(_Worker(ctx, fn))
            for w in workers:
                if w.task is None and pending:
                    w.give(*pending.popleft())
            busy = [w for w in workers if w.task is not None]
            wait([w.conn for w in busy] + [w.proc.sentinel for w in busy])
            for w in busy:
                got = _receive(w)
                if got is not None:
                    w.task = None
                    on_result(*got)
                elif not w.proc.is_alive():
                    index, w.task = w.task, None
                    workers.remove(w)
                    w.conn.close()
                    on_result(index, WorkerDied(f"worker process ended ({_how(w.proc.exitcode)})", w.proc.pid))
            for w in [w for w in workers if w.task is None and not pending]:
                w.stop()
                workers.remove(w)
                w.proc.join()
    except BaseException:
        _end(workers, on_result)
        raise
    for w in workers:
        w.stop()
        w.proc.join()


def _end(workers: list[_Worker], on_result: Callable[[int, Any], None]) -> None:
    """Terminate the workers, wait up to 5 s in all (then kill), and report what they finished meanwhile."""
    for w in workers:
        if w.proc.is_alive():
            w.proc.terminate()
    deadline = time.monotonic() + 5.0
    for w in workers:
        w.proc.join(max(deadline - time.monotonic(), 0.1))
        if w.proc.is_alive():
            w.proc.kill()
            w.proc.join()
    for w in workers:
        got = _receive(w) if w.task is not None else None
        if got is not None:
            on_result(*got)


def _how(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        return f"killed by {signal.Signals(-exitcode).name}"
    return f"exit status {exitcode}"
