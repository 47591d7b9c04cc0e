"""Hand-written Linux namespaces: the fallback sandbox when bubblewrap is missing or refused.

Used by kata/grading/child.py, as root, in each test process before it drops
its privileges. Inside bubblewrap (kata/grading/sandbox.py), which has already
made the file system (only Python, the kata and the checks), they give each
test process its own ``/tmp``, ``/dev/shm``, home and namespaces
(:meth:`Namespaces.own_home`); where ``bwrap`` can't be run they do all of it
(:meth:`Namespaces.shut_files`). Each part is tried on its own; what the
platform refuses is skipped and said:

* its own network namespace (no network, no abstract Unix sockets of the host);
* its own mount namespace: every file system read-only except the run folder,
  a fresh ``/tmp`` and ``/dev/shm``, and the folders it must not read (the
  reference solutions, the grader's) hidden under empty ones;
* its own PID, IPC and UTS namespaces (it sees and signals only its own
  processes; when its first process ends, the kernel ends them all; its own
  host name).

Only the standard library (and ctypes for the system calls) is used.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import re

__all__ = ["Namespaces", "mount_points"]

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC = 32, 1024, 2048, 4096, 16384
MS_PRIVATE, MS_RELATIME, MS_STRICTATIME = 1 << 18, 1 << 21, 1 << 24
MOUNT_OPTION_FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": MS_NOATIME,
                      "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME, "strictatime": MS_STRICTATIME}
KEEP_MOUNTS = ("/proc", "/sys", "/dev")   # /proc is remounted for the PID namespace; /dev/shm gets its own
PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP = 38, 24
LINUX_CAPABILITY_VERSION_3 = 0x20080522
MNT_DETACH = 2
STAGING = "/.kata-staging"   # an empty folder bubblewrap makes, where the old /tmp is held for a moment


def _libc():
    return ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def mount_points() -> list[tuple[str, set[str]]]:
    """(mount point, per-mount options) for each mount, from /proc/self/mountinfo."""
    points = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])  # \040: a space
            points.append((point, set(fields[5].split(","))))
    return points


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


class Namespaces:
    """Enter the namespaces, as root, before the privileges are dropped."""

    def __init__(self):
        self.libc = _libc()
        self.notes: list[str] = []
        self.flags = 0

    def unshare(self) -> int:
        for attempt in (CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS,
                        CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID, CLONE_NEWNET):
            try:
                _check(self.libc.unshare(attempt), "unshare")
                self.flags = attempt
                break
            except OSError as err:
                self.notes.append(f"unshare refused ({err.strerror})")
        if self.flags & CLONE_NEWUTS:
            name = b"kata-sandbox"
            self.libc.sethostname(name, len(name))
        return self.flags

    def mount(self, source, target, fstype, flags: int, data=None) -> None:
        def enc(s):
            return s.encode() if isinstance(s, str) else s

        _check(self.libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
               f"mount {target}")

    def shut_files(self, run_dir: str, hidden: list[str]) -> str:
        """Every file system read-only except ``run_dir``; fresh /tmp and /dev/shm; ``hidden`` emptied."""
        self.mount(None, "/", None, MS_REC | MS_PRIVATE)
        self.mount(run_dir, run_dir, None, MS_BIND | MS_REC)
        failed = []
        for point, options in mount_points():
            if point == run_dir or point.startswith(run_dir + "/") or "ro" in options:
                continue
            if any(point == keep or point.startswith(keep + "/") for keep in KEEP_MOUNTS):
                continue
            flags = MS_REMOUNT | MS_BIND | MS_RDONLY
            for name, flag in MOUNT_OPTION_FLAGS.items():
                if name in options:
                    flags |= flag
            try:
                self.mount(None, point, None, flags)
            except OSError:
                failed.append(point)
        for folder, mode in (("/tmp", "1777"), ("/dev/shm", "1777")):
            if run_dir.startswith(folder + "/"):
                self.notes.append(f"{folder} stays (read-only): its folder is there; TMPDIR is its own")
                continue
            try:
                self.mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, f"mode={mode}")
            except OSError as err:
                self.notes.append(f"{folder} stays shared ({err.strerror})")
        for folder in hidden:
            if os.path.isdir(folder) and not run_dir.startswith(folder.rstrip("/") + "/"):
                try:
                    self.mount("tmpfs", folder, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "mode=0555,size=4k")
                except OSError as err:
                    self.notes.append(f"{folder} stays visible ({err.strerror})")
        return "read-only outside its own folder" + (", except " + ", ".join(failed) if failed else "")

    def own_home(self, run_dir: str, home: str, hidden: list[str], keep: list[str]) -> str:
        """Inside bubblewrap: ``run_dir`` at ``home``, fresh /tmp and /dev/shm (what bubblewrap put under /tmp,
        Python or the kata, listed in ``keep``, is put back, read-only), the folders in ``hidden`` emptied."""
        self.mount(None, "/", None, MS_REC | MS_PRIVATE)
        self.mount(run_dir, home, None, MS_BIND | MS_REC)
        kept = [path for path in keep if path.startswith("/tmp/")]
        if kept:
            self.mount("/tmp", STAGING, None, MS_BIND | MS_REC)
        self.mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
        for path in kept:
            source = STAGING + path[len("/tmp"):]
            if os.path.isdir(source):
                os.makedirs(path, mode=0o755, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
                open(path, "a").close()
            self.mount(source, path, None, MS_BIND | MS_REC)
            self.mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
        if kept:
            _check(self.libc.umount2(STAGING.encode(), MNT_DETACH), f"umount {STAGING}")
        self.mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
        for folder in hidden:
            if os.path.isdir(folder):
                self.mount("tmpfs", folder, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "mode=0555,size=4k")
        return "bubblewrap's: only Python, the kata, the checks and its own folder"

    def proc(self) -> None:
        try:
            self.mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        except OSError as err:
            self.notes.append(f"/proc not remounted ({err.strerror})")

    def no_new_privileges(self) -> None:
        _check(self.libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")

    def drop_capabilities(self) -> None:
        """No capabilities left, none to gain back (for a test process that stays root: it can't
        remount, unhide or leave what was set up above)."""
        for cap in range(64):
            self.libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # EINVAL past the last one: fine
        header, data = _CapHeader(LINUX_CAPABILITY_VERSION_3, 0), (_CapData * 2)()
        _check(self.libc.capset(ctypes.byref(header), ctypes.byref(data)), "capset")
        self.no_new_privileges()
