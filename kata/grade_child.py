"""The grading child: one submission's checks, in a sandbox (used by `kata grade`).

`kata grade` (kata/grade.py) starts this file once per submission as

    python -I -B kata/grade_child.py CONFIG.json

in a new session, with the results file open on the descriptor CONFIG names.
It reads CONFIG (as the grader's user), shuts itself in as far as the platform
allows, and only then imports pytest and runs the pristine checks (tests/) on
the submission's copy, with kata/grade_plugin.py writing each check's outcome
to the results file as it ends.

The sandbox, on Linux as root (each part is skipped, and reported, where the
platform refuses it):

* its own network namespace: no network at all, not even loopback to the host;
* its own mount namespace in which every file system is read-only except the
  submission's own working folder (so nothing it writes lands next to another
  submission, in the project, or in the grader's output folder);
* its own PID namespace: it can see and signal only its own processes, and
  when its first process ends the kernel ends them all;
* no capabilities and no new privileges (it can't undo the above);
* resource limits everywhere: memory (RLIMIT_DATA, and RLIMIT_AS as a
  backstop), CPU seconds, file size, no core files.

Elsewhere (not root, not Linux) it runs with the resource limits only.

Only the standard library is imported before the sandbox is in place.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import re
import signal
import sys

try:
    import resource
except ImportError:  # Windows
    resource = None

CLONE_NEWNS = 0x00020000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC = 32, 1024, 2048, 4096, 16384
MS_PRIVATE, MS_RELATIME, MS_STRICTATIME = 1 << 18, 1 << 21, 1 << 24
MOUNT_OPTION_FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC,
                      "noatime": MS_NOATIME, "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME,
                      "strictatime": MS_STRICTATIME}
# Kernel file systems that stay as they are: /proc is remounted for the new PID
# namespace, and /dev must stay usable (/dev/null, /dev/shm for DataLoader workers).
KEEP_MOUNTS = ("/proc", "/sys", "/dev")

PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 4, 24, 38
LINUX_CAPABILITY_VERSION_3 = 0x20080522

_libc = None


def libc():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    return _libc


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def unshare(flags: int) -> None:
    _check(libc().unshare(flags), "unshare")


def mount(source, target, fstype, flags: int, data=None) -> None:
    enc = (lambda s: s.encode() if isinstance(s, str) else s)
    _check(libc().mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
           f"mount {target}")


def mount_points() -> list[tuple[str, set[str]]]:
    """(mount point, per-mount options) for each mount, from /proc/self/mountinfo."""
    points = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])  # \040: a space
            points.append((point, set(fields[5].split(","))))
    return points


def read_only_except(folder: str) -> list[str]:
    """Make every file system read-only in this (new, private) mount namespace,
    except ``folder``, which is bind-mounted onto itself and stays writable.
    Returns the mount points that could not be made read-only."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount(folder, folder, None, MS_BIND | MS_REC)
    failed = []
    for point, options in mount_points():
        if point == folder or point.startswith(folder + "/"):
            continue
        if any(point == keep or point.startswith(keep + "/") for keep in KEEP_MOUNTS):
            continue
        if "ro" in options:
            continue
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY
        for name, flag in MOUNT_OPTION_FLAGS.items():
            if name in options:
                flags |= flag
        try:
            mount(None, point, None, flags)
        except OSError:
            failed.append(point)
    return failed


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def drop_privileges() -> None:
    """No capabilities left (so no remounting, no leaving the namespaces), and no
    way to gain any back through a setuid program."""
    lib = libc()
    for cap in range(64):
        lib.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # EINVAL past the last one: fine
    header = _CapHeader(LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    _check(lib.capset(ctypes.byref(header), ctypes.byref(data)), "capset")
    _check(lib.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")


def set_limits(limits: dict) -> list[str]:
    """Resource limits for this process and everything it starts."""
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
            soft, hard = resource.getrlimit(which)
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            resource.setrlimit(which, (value, value))
        except (OSError, ValueError):
            missing.append(name)

    limit("RLIMIT_DATA", memory)               # heap and anonymous mappings: what "memory" means here
    limit("RLIMIT_AS", memory + 8 * 2**30)     # a backstop where RLIMIT_DATA counts less (old kernels)
    limit("RLIMIT_CPU", int(limits["cpu_seconds"]))
    limit("RLIMIT_FSIZE", limits["file_mb"] * 2**20)
    limit("RLIMIT_CORE", 0)
    if hasattr(signal, "SIGXFSZ"):
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # too large a file: an OSError, not death
    return missing


def emit(fd: int, event: dict) -> None:
    try:
        os.write(fd, (json.dumps(event) + "\n").encode())
    except OSError:
        pass


def describe_status(status: int) -> dict:
    """A wait status as {"code": n} or {"signal": n}."""
    if os.WIFSIGNALED(status):
        return {"signal": os.WTERMSIG(status)}
    return {"code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1}


def wait_for(pid: int, reap_all: bool) -> int:
    """Wait for ``pid`` (reaping any other child that ends meanwhile, as the init
    of a PID namespace must) and return its wait status."""
    while True:
        try:
            done, status = os.waitpid(-1 if reap_all else pid, 0)
        except ChildProcessError:
            return 0
        except InterruptedError:
            continue
        if done == pid:
            return status


def exit_like(status: int) -> None:
    """End this process as the waited-for one ended (an exit code, or 128+signal)."""
    info = describe_status(status)
    os._exit(info["code"] if "code" in info else 128 + info["signal"])


def run_checks(config: dict) -> int:
    """Inside the sandbox: run pytest on the checks, with the results plugin."""
    os.chdir(config["run_dir"])
    os.umask(0o077)
    sys.path[:] = [p for p in sys.path if p and os.path.abspath(p) != config["run_dir"]]
    try:
        from kata import grade_plugin
    except ImportError:  # the project is not pip-installed: use it from its folder
        sys.path.insert(0, config["project_root"])
        from kata import grade_plugin
    import pytest

    args = list(config["pytest_args"])
    if not grade_plugin.kata_plugin_registered():
        args += ["-p", "kata.pytest_plugin"]
    return int(pytest.main(args, plugins=[grade_plugin.GradePlugin(config)]))


def main(argv: list[str]) -> None:
    with open(argv[1]) as f:
        config = json.load(f)
    fd = config["results_fd"]
    sandbox = {"network": "not isolated", "files": "not isolated", "processes": "not isolated",
               "privileges": "unchanged", "limits": "set", "notes": []}
    flags = 0
    if sys.platform.startswith("linux") and config.get("isolate", True):
        for attempt in (CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID, CLONE_NEWNET):
            try:
                unshare(attempt)
                flags = attempt
                break
            except OSError as err:
                sandbox["notes"].append(f"unshare failed ({err.strerror})")
        if flags & CLONE_NEWNET:
            sandbox["network"] = "none (own network namespace)"
        if flags & CLONE_NEWNS:
            try:
                failed = read_only_except(config["run_dir"])
                sandbox["files"] = ("read-only outside its own folder" if not failed else
                                    "read-only outside its own folder, except " + ", ".join(failed))
            except OSError as err:
                sandbox["notes"].append(f"file systems stay writable ({err.strerror})")
    elif not sys.platform.startswith("linux"):
        sandbox["notes"].append(f"no namespaces on {sys.platform}")

    if flags & CLONE_NEWPID:
        # The next child is the namespace's init; it runs the checks in its own child.
        init = os.fork()
        if init:
            status = wait_for(init, reap_all=False)
            exit_like(status)
        try:
            mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        except OSError as err:
            sandbox["notes"].append(f"/proc not remounted ({err.strerror})")
        sandbox["processes"] = "own PID namespace"
        libc().prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # the checks' process can't trace this one (it keeps privileges)
        worker = os.fork()
        if worker:
            signal.signal(signal.SIGTERM, lambda *_: os.kill(worker, signal.SIGKILL))
            status = wait_for(worker, reap_all=True)
            emit(fd, {"e": "exit", **describe_status(status)})
            exit_like(status)

    if flags:
        try:
            drop_privileges()
            sandbox["privileges"] = "no capabilities, no new privileges"
        except OSError as err:
            sandbox["notes"].append(f"privileges kept ({err.strerror})")
    missing = set_limits(config["limits"])
    if missing:
        sandbox["limits"] = "set, except " + ", ".join(missing)
    emit(fd, {"e": "sandbox", **sandbox})

    try:
        code = run_checks(config)
    except BaseException as exc:  # noqa: BLE001 - whatever happens, say it and end
        emit(fd, {"e": "error", "message": f"{type(exc).__name__}: {exc}"})
        code = 3
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    if not flags & CLONE_NEWPID:
        emit(fd, {"e": "exit", "code": code})
    os._exit(code)


if __name__ == "__main__":
    main(sys.argv)
