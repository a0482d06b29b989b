"""Runs one command inside a sandbox directory, as if that directory were `/`.

    python3 -I -S jail.py ROOT CWD PROGRAM [ARGS...]

The provider starts every command through this helper, with the command's environment as the
helper's. It enters a new mount namespace (inside a new user namespace when it can: that is
what lets an ordinary user do it), makes every mount private so nothing it does reaches the
host, bind-mounts the host's program directories (and /etc) read-only and a few device nodes
onto the mount points the provider made in ROOT, changes root to ROOT, changes directory to
CWD and replaces itself with PROGRAM (searched in PATH when it has no '/').

Exit status when the command never starts: 127 when PROGRAM does not exist, 126 when it cannot
be executed, 1 when CWD does not exist, 125 when the sandbox cannot be entered (namespaces are
unavailable). Standard library only (ctypes for unshare(2) and mount(2)); Linux only.

This is a test provider's isolation: commands see only their sandbox's files, but it is not a
security boundary (the command runs as the provider's user, root inside the namespace).
"""

import ctypes
import os
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_RELATIME = 1 << 21

# Host directories bound read-only at the same place in the sandbox (when they are real
# directories on the host; symbolic links among them are copied by the provider instead).
SYSTEM_DIRS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc")
# Device nodes bound onto empty files of the sandbox's /dev.
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")

EXIT_CANNOT_ENTER = 125
EXIT_NOT_EXECUTABLE = 126
EXIT_NOT_FOUND = 127

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p)
_libc.unshare.argtypes = (ctypes.c_int,)


class CannotEnter(Exception):
    """The sandbox could not be entered."""


def _check(result, what):
    if result != 0:
        code = ctypes.get_errno()
        raise CannotEnter(f"{what}: {os.strerror(code)}")


def _mount(source, target, flags):
    src = source.encode() if source else None
    _check(_libc.mount(src, target.encode(), None, flags, None), f"mount {target}")


def _locked_flags(path):
    """The flags a read-only remount must keep (a user namespace may not drop them)."""
    st = os.statvfs(path).f_flag
    flags = 0
    for st_flag, ms_flag in ((os.ST_NOSUID, MS_NOSUID), (os.ST_NODEV, MS_NODEV), (os.ST_NOEXEC, MS_NOEXEC),
                             (os.ST_NOATIME, MS_NOATIME), (os.ST_NODIRATIME, MS_NODIRATIME),
                             (os.ST_RELATIME, MS_RELATIME)):
        if st & st_flag:
            flags |= ms_flag
    return flags


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def enter(root):
    """Enters the namespaces and changes root to `root`."""
    uid, gid = os.getuid(), os.getgid()
    if _libc.unshare(CLONE_NEWUSER | CLONE_NEWNS) == 0:
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"0 {uid} 1")
        _write("/proc/self/gid_map", f"0 {gid} 1")
    elif uid == 0:
        _check(_libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    else:
        raise CannotEnter(f"unshare(CLONE_NEWUSER): {os.strerror(ctypes.get_errno())}")
    # Nothing mounted from here on may propagate back to the host.
    _mount(None, "/", MS_REC | MS_PRIVATE)
    for name in SYSTEM_DIRS:
        host, inside = "/" + name, os.path.join(root, name)
        if os.path.isdir(host) and not os.path.islink(host) and os.path.isdir(inside) \
                and not os.path.islink(inside):
            _mount(host, inside, MS_BIND | MS_REC)
            _mount(None, inside, MS_BIND | MS_REMOUNT | MS_RDONLY | _locked_flags(inside))
    for name in DEVICES:
        host, inside = "/dev/" + name, os.path.join(root, "dev", name)
        if os.path.exists(host) and os.path.isfile(inside):
            _mount(host, inside, MS_BIND)
    os.chroot(root)


def main(argv):
    if len(argv) < 4:
        print("usage: jail.py ROOT CWD PROGRAM [ARGS...]", file=sys.stderr)
        return 2
    root, cwd, program, args = argv[1], argv[2], argv[3], argv[3:]
    try:
        enter(root)
    except (CannotEnter, OSError) as e:
        print(f"cannot enter the sandbox: {e}", file=sys.stderr)
        return EXIT_CANNOT_ENTER
    try:
        os.chdir(cwd)
    except OSError as e:
        print(f"cannot change directory to {cwd}: {e.strerror}", file=sys.stderr)
        return 1
    return run(program, args, os.environ)


def run(program, args, env):
    """Replaces this process with `program`, searched in PATH as a shell does; returns the
    exit status when it cannot (127 not found, 126 not executable)."""
    if "/" in program:
        candidates = [program]
    else:
        path = env.get("PATH", "/usr/local/bin:/usr/bin:/bin")
        candidates = [os.path.join(d or ".", program) for d in path.split(":")]
    denied = None
    for candidate in candidates:
        try:
            os.execve(candidate, args, env)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as e:
            # EACCES (no execute bit), ENOEXEC (no known format), EISDIR: found, not runnable.
            denied = denied or e
            continue
    if denied is not None:
        print(f"{program}: {denied.strerror}", file=sys.stderr)
        return EXIT_NOT_EXECUTABLE
    print(f"{program}: not found", file=sys.stderr)
    return EXIT_NOT_FOUND

if __name__ == "__main__":
    sys.exit(main(sys.argv))
