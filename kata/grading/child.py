"""A test process: one submission's checks, forked from the zygote (kata/grading/zygote.py).

The zygote has imported Python's heavy libraries once; each test process is a
fork of it that, before any of the submission's code exists in it:

1. waits until the grader has put it in the submission's cgroup;
2. as root, enters its own namespaces (kata/grading/namespaces.py): inside
   bubblewrap, its own mount, PID, network, IPC and UTS namespaces with a
   fresh ``/tmp`` and ``/dev/shm``, the submission's folder as its home and
   every other submission's hidden; without bubblewrap, the same plus a
   read-only file system;
3. drops to the unprivileged user the grader chose (no capabilities, no new
   privileges), sets its resource limits, takes the environment the grader
   gave it;
4. runs pytest on the pristine checks against the submission's copy, with the
   grading plugin (kata/grading/plugin.py) writing each check's outcome to the
   results descriptor, and the tripwire (kata/grading/tripwire.py) armed before
   the submission's first module is imported.
"""

from __future__ import annotations

import fcntl
import os
import random
import signal
import sys

from kata.grading.channel import sender

try:
    import resource
except ImportError:  # not on Linux or macOS
    resource = None

__all__ = ["start"]

RESULTS_FD_FLOOR = 600   # the results descriptor is moved up here, away from the usual numbers
_exit = os._exit


def _set_limits(limits: dict) -> list[str]:
    """Resource limits for this process and everything it starts; returns those that could not be set."""
    if resource is None:
        return ["resource limits (not available on this platform)"]
    missing = []
    memory = limits["memory_mb"] * 2**20

    def limit(name, value):
        which = getattr(resource, name, None)
        if which is None:
            missing.append(name)
            return
        try:
            _, hard = resource.getrlimit(which)
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            resource.setrlimit(which, (value, value))
        except (OSError, ValueError):
            missing.append(name)

    limit("RLIMIT_DATA", memory)               # heap and anonymous mappings of one process: a MemoryError
    limit("RLIMIT_AS", memory + 8 * 2**30)     # a backstop where RLIMIT_DATA counts less
    limit("RLIMIT_CPU", int(limits["cpu_seconds"]))
    limit("RLIMIT_FSIZE", limits["file_mb"] * 2**20)
    limit("RLIMIT_CORE", 0)
    if limits.get("processes"):
        limit("RLIMIT_NPROC", int(limits["processes"]))
    if hasattr(signal, "SIGXFSZ"):
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # too large a file: an OSError, not death
    return missing


def _drop_privileges(uid: int, gid: int) -> None:
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getuid() != uid or os.geteuid() != uid:
        raise OSError("the user did not change")


def _wait_for(pid: int, reap_all: bool) -> int:
    """Wait for ``pid`` (reaping any other child meanwhile, as a PID namespace's init must)."""
    while True:
        try:
            done, status = os.waitpid(-1 if reap_all else pid, 0)
        except ChildProcessError:
            return 0
        except InterruptedError:
            continue
        if done == pid:
            return status


def _describe_status(status: int) -> dict:
    if os.WIFSIGNALED(status):
        return {"signal": os.WTERMSIG(status)}
    return {"code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1}


def _exit_like(status: int) -> None:
    info = _describe_status(status)
    os._exit(info["code"] if "code" in info else 128 + info["signal"])


def _hide_results_fd(fd: int) -> int:
    """Move the results descriptor to a number no one guesses, closed on exec."""
    new = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, RESULTS_FD_FLOOR + random.randrange(300))
    os.close(fd)
    return new


def _cpu_seconds() -> dict:
    if resource is None:
        return {}
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    user, system = me.ru_utime + children.ru_utime, me.ru_stime + children.ru_stime
    return {"seconds": round(user + system, 2), "user": round(user, 2), "system": round(system, 2)}


def _enter_namespaces(config: dict, emit, fd: int, key: str, sandbox: dict) -> bool:
    """As root: the namespaces (see the module's docstring). True in the worker of a new PID namespace."""
    from kata.grading.namespaces import CLONE_NEWNET, CLONE_NEWNS, CLONE_NEWPID, Namespaces

    ns = Namespaces()
    flags = ns.unshare()
    if flags & CLONE_NEWNET:
        sandbox["network"] = "none (own network namespace)"
    if flags & CLONE_NEWNS:
        try:
            if config["mode"] == "bubblewrap":
                sandbox["files"] = ns.own_home(config["host_run_dir"], config["run_dir"], config["hide"],
                                               config.get("keep", []))
            else:
                sandbox["files"] = ns.shut_files(config["run_dir"], config["hide"])
        except OSError as err:
            emit({"e": "error", "message": f"the sandbox could not be set up: {err}"})
            _exit(4)
    if flags & CLONE_NEWPID:
        init = os.fork()
        if init:
            _exit_like(_wait_for(init, reap_all=False))
        ns.libc.prctl(1, signal.SIGKILL, 0, 0, 0)   # PR_SET_PDEATHSIG: ends (and its namespace) with its parent
        ns.proc()
        sandbox["processes"] = "own PID namespace"
        worker = os.fork()
        if worker:
            signal.signal(signal.SIGTERM, lambda *_: os.kill(worker, signal.SIGKILL))
            status = _wait_for(worker, reap_all=True)
            sender(fd, key, "init")({"e": "exit", **_describe_status(status)})
            _exit_like(status)
    try:
        ns.no_new_privileges()
    except OSError as err:
        ns.notes.append(str(err))
    sandbox["notes"] += ns.notes
    return bool(flags & CLONE_NEWPID)


def _run_checks(config: dict, emit) -> int:
    """pytest on the checks, with the grading plugin."""
    from importlib.metadata import entry_points

    import pytest

    from kata.grading.plugin import GradePlugin

    args = list(config["pytest_args"])
    if not any(ep.value == "kata.harness.plugin" for ep in entry_points(group="pytest11")):
        args += ["-p", "kata.harness.plugin"]
    return int(pytest.main(args, plugins=[GradePlugin(config, emit)]))


def _set_threads(threads: int) -> None:
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            torch.set_num_threads(threads)
        except RuntimeError:
            pass


def start(config: dict, results_fd: int, go_fd: int) -> None:
    """The whole life of a test process (it never returns)."""
    code = 3
    try:
        fd = _hide_results_fd(results_fd)
        key = config.pop("key")
        emit = sender(fd, key)
        os.read(go_fd, 1)   # the grader has put this process in the submission's cgroup
        os.close(go_fd)
        sandbox = {"notes": []}
        in_pid_namespace = False
        if config["mode"] != "none" and sys.platform.startswith("linux") and os.geteuid() == 0:
            in_pid_namespace = _enter_namespaces(config, emit, fd, key, sandbox)
        del key
        try:
            if config.get("uid") is not None:
                _drop_privileges(config["uid"], config["gid"])
            elif os.geteuid() == 0 and sys.platform.startswith("linux"):
                from kata.grading.namespaces import Namespaces

                Namespaces().drop_capabilities()
                sandbox["notes"].append("runs as root, without capabilities")
        except OSError as err:
            emit({"e": "error", "message": f"could not drop privileges: {err}"})
            _exit(4)
        missing = _set_limits(config["limits"])
        if missing:
            sandbox["notes"].append("limits not set: " + ", ".join(missing))
        os.environ.clear()
        os.environ.update(config["env"])
        os.chdir(config["run_dir"])
        os.umask(0o077)
        _set_threads(int(config["env"].get("OMP_NUM_THREADS", "1")))
        emit({"e": "sandbox", **sandbox})
        try:
            code = _run_checks(config, emit)
        except BaseException as exc:  # noqa: BLE001 - whatever happens, say it and end
            emit({"e": "error", "message": f"{type(exc).__name__}: {exc}"})
            code = 3
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
        emit({"e": "cpu", **_cpu_seconds()})
        if not in_pid_namespace:
            emit({"e": "exit", "code": code})
    finally:
        _exit(code)
