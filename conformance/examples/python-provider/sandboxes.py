"""The provider itself: a sandbox is a directory of its own under the provider's root; commands
are local processes that see that directory as `/` (through jail.py); files are read and
written in it directly, resolving paths as the sandbox would see them.

Every public coroutine of `Provider` implements one method of the protocol and either returns
the result object or raises `ProviderError` with a contract error code. Standard library only.
"""

import asyncio
import base64
import datetime
import os
import re
import signal
import stat
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
JAIL = os.path.join(HERE, "jail.py")

# What the provider declares (see PROTOCOL.md for the names).
CAPABILITIES = ["exec", "exec.stream", "files", "stdin", "ttl"]
TEMPLATE = "plain"
MAX_READ_BYTES = 1 << 20
MAX_WRITE_BYTES = 2 << 20
MAX_PATH_LEN = 4096
EXIT_TIMEOUT = 124
BASE_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/", "LANG": "C.UTF-8"}
# The skeleton of every sandbox: mount points for jail.py and a scratch directory.
SYSTEM_DIRS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc")
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")

ID_RE = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
LABEL_RE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")


class ProviderError(Exception):
    """A contract error: `code` is one of the contract's error codes."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


def invalid(message):
    return ProviderError("invalid_request", message)


def unsupported(operation):
    return ProviderError("unsupported_operation", f"`{operation}` is not supported by this provider")


def rfc3339(seconds):
    at = datetime.datetime.fromtimestamp(seconds, tz=datetime.timezone.utc)
    return at.isoformat(timespec="microseconds").replace("+00:00", "Z")


def b64(data):
    return base64.b64encode(data).decode("ascii")


def unb64(text, field):
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError, AttributeError):
        raise invalid(f"{field} is not base64")


def cut(text):
    return text[:64]


# ---- request checks (the contract's validate functions) ----

def check_id(value, field="id"):
    if not isinstance(value, str) or not ID_RE.match(value):
        raise invalid(f"{field} {cut(str(value))!r} is not a sandbox id (an RFC 1035 label)")
    return value


def check_env(env):
    if not isinstance(env, dict):
        raise invalid("env is not an object")
    for name, value in env.items():
        if not ENV_NAME_RE.match(name):
            raise invalid(f"environment variable name {cut(name)!r} is not a letter or '_' "
                          "followed by letters, digits or '_'")
        if not isinstance(value, str) or "\0" in value:
            # The value is never repeated: it may be a credential.
            raise invalid(f"environment variable {name} has a NUL byte in its value")
    return env


def check_labels(labels):
    for key, value in labels.items():
        if not key or not LABEL_RE.match(key):
            raise invalid(f"label key {cut(key)!r} is not 1 to 63 letters, digits, '-', '_' or '.'")
        if not isinstance(value, str) or not LABEL_RE.match(value):
            raise invalid(f"label {key} has a value that is not up to 63 letters, digits, '-', '_' or '.'")
    return labels


def check_path(path):
    if not isinstance(path, str) or not path:
        raise invalid("path is empty")
    if not path.startswith("/"):
        raise invalid(f"path {cut(path)!r} is not absolute")
    if len(path.encode()) > MAX_PATH_LEN:
        raise invalid(f"path is more than {MAX_PATH_LEN} bytes")
    if "\0" in path:
        raise invalid("path holds a NUL byte")
    return path


def check_create(request):
    check_id(request.get("id"), "request.id")
    template = request.get("template")
    if template is not None:
        if not template or len(template.encode()) > 512 or any(c.isspace() or not c.isprintable() for c in template):
            raise invalid("template is empty, longer than 512 bytes, or holds whitespace")
    check_env(request.get("env", {}))
    for key, value in request.get("resources", {}).items():
        if value == 0:
            raise invalid(f"resources.{key} must be positive")
    if request.get("ttl_ms") == 0:
        raise invalid("ttl must be positive")
    check_labels(request.get("labels", {}))


def check_exec(request, streamed_allowed):
    argv = request.get("argv")
    if not argv:
        raise invalid("argv is empty")
    if not argv[0]:
        raise invalid("argv[0] is empty")
    for index, arg in enumerate(argv):
        if "\0" in arg:
            raise invalid(f"argv[{index}] holds a NUL byte")
    check_env(request.get("env", {}))
    cwd = request.get("cwd")
    if cwd is not None:
        if not cwd.startswith("/"):
            raise invalid("cwd is not an absolute path")
        if "\0" in cwd:
            raise invalid("cwd holds a NUL byte")
    if request.get("timeout_ms") == 0:
        raise invalid("timeout must be positive")
    stdin = request.get("stdin", {"type": "empty"})
    if stdin.get("type") == "streamed" and not streamed_allowed:
        raise invalid("streamed stdin is only for exec_stream")
    if stdin.get("type") not in ("empty", "bytes", "streamed"):
        raise invalid("stdin.type is not empty, bytes or streamed")


# ---- one sandbox ----

class Sandbox:
    def __init__(self, request, root, number):
        self.id = request["id"]
        self.root = root
        self.template = request.get("template")
        self.env = dict(request.get("env", {}))
        self.labels = dict(request.get("labels", {}))
        self.created_at = time.time()
        self.provider_ref = f"dir-{number}-{self.id}"
        self.expires_at = None
        self.timer = None
        self.processes = set()

    def record(self):
        record = {"id": self.id, "state": "running", "provider_ref": self.provider_ref,
                  "labels": self.labels, "created_at": rfc3339(self.created_at)}
        if self.template is not None:
            record["template"] = self.template
        if self.expires_at is not None:
            record["expires_at"] = rfc3339(self.expires_at)
        return record

    def host_path(self, path, follow_last=True):
        """Resolves a sandbox path to a path under `root`, following symbolic links as the
        sandbox would (an absolute target starts again from the sandbox's `/`)."""
        pending = [p for p in path.split("/") if p not in ("", ".")]
        resolved = []
        hops = 0
        while pending:
            part = pending.pop(0)
            if part == "..":
                if resolved:
                    resolved.pop()
                continue
            candidate = os.path.join(self.root, *resolved, part)
            if os.path.islink(candidate) and (pending or follow_last):
                hops += 1
                if hops > 40:
                    raise invalid(f"too many symbolic links in {cut(path)!r}")
                target = os.readlink(candidate)
                if target.startswith("/"):
                    resolved = []
                pending = [p for p in target.split("/") if p not in ("", ".")] + pending
                continue
            resolved.append(part)
        return os.path.join(self.root, *resolved)


def make_skeleton(root):
    """Makes a sandbox's directory: mount points for the host's program directories (or the
    same symbolic links the host has), empty files for device nodes, and /tmp."""
    os.makedirs(root)
    for name in SYSTEM_DIRS:
        host = "/" + name
        if os.path.islink(host):
            os.symlink(os.readlink(host), os.path.join(root, name))
        elif os.path.isdir(host):
            os.mkdir(os.path.join(root, name))
    os.mkdir(os.path.join(root, "dev"))
    for name in DEVICES:
        open(os.path.join(root, "dev", name), "wb").close()
    os.mkdir(os.path.join(root, "tmp"))
    os.chmod(os.path.join(root, "tmp"), 0o1777)


def remove_tree(path):
    """Removes a sandbox's directory without ever following a link or crossing into another
    filesystem (a bind mount that leaked would be skipped, never emptied)."""
    try:
        top = os.lstat(path)
    except FileNotFoundError:
        return

    def walk(directory):
        for entry in os.scandir(directory):
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                if st.st_dev != top.st_dev:
                    continue
                walk(entry.path)
                os.rmdir(entry.path)
            else:
                os.unlink(entry.path)

    if stat.S_ISDIR(top.st_mode):
        walk(path)
        os.rmdir(path)


def file_info(path, host):
    st = os.lstat(host)
    if stat.S_ISDIR(st.st_mode):
        kind = "directory"
    elif stat.S_ISREG(st.st_mode):
        kind = "file"
    elif stat.S_ISLNK(st.st_mode):
        kind = "symlink"
    else:
        kind = "other"
    name = path.rstrip("/").rsplit("/", 1)[-1] or "/"
    return {"path": path, "name": name, "kind": kind, "size": st.st_size,
            "mode": stat.S_IMODE(st.st_mode), "modified": rfc3339(st.st_mtime)}


def exit_status(returncode):
    return 128 - returncode if returncode < 0 else returncode


# ---- the provider ----

class Provider:
    def __init__(self, root):
        self.root = root
        self.sandboxes = {}
        self.count = 0

    def info(self):
        return {
            "name": "python-example",
            "capabilities": CAPABILITIES,
            "templates": [{"name": TEMPLATE, "description": "an empty directory; the host's programs, read-only"}],
            "accepts_unlisted_templates": False,
            "limits": {"max_read_bytes": MAX_READ_BYTES, "max_write_bytes": MAX_WRITE_BYTES},
        }

    def health(self):
        if os.access(self.root, os.W_OK):
            return {"status": "healthy"}
        return {"status": "unhealthy", "message": "the sandboxes' directory is not writable"}

    def sandbox(self, sandbox_id):
        sandbox = self.sandboxes.get(sandbox_id)
        if sandbox is None:
            raise ProviderError("not_found", f"sandbox {sandbox_id} does not exist")
        return sandbox

    async def create(self, request):
        check_create(request)
        if request.get("template") not in (None, TEMPLATE):
            raise invalid(f"template {cut(request['template'])!r} does not exist; this provider offers {TEMPLATE!r}")
        existing = self.sandboxes.get(request["id"])
        if existing is not None:
            return existing.record()
        self.count += 1
        root = os.path.join(self.root, f"{self.count}-{request['id']}")
        make_skeleton(root)
        sandbox = Sandbox(request, root, self.count)
        self.sandboxes[sandbox.id] = sandbox
        if request.get("ttl_ms") is not None:
            self.arm_ttl(sandbox, request["ttl_ms"])
        return sandbox.record()

    def arm_ttl(self, sandbox, ttl_ms):
        if sandbox.timer is not None:
            sandbox.timer.cancel()
            sandbox.timer = None
        if ttl_ms is None:
            sandbox.expires_at = None
            return
        sandbox.expires_at = time.time() + ttl_ms / 1000
        loop = asyncio.get_running_loop()
        sandbox.timer = loop.call_later(ttl_ms / 1000, lambda: loop.create_task(self.delete(sandbox.id)))

    async def get(self, sandbox_id):
        return self.sandbox(check_id(sandbox_id)).record()

    async def list(self):
        return [s.record() for s in self.sandboxes.values()]

    async def delete(self, sandbox_id):
        check_id(sandbox_id)
        sandbox = self.sandboxes.pop(sandbox_id, None)
        if sandbox is None:
            return
        if sandbox.timer is not None:
            sandbox.timer.cancel()
        for process in list(sandbox.processes):
            kill(process)
        for process in list(sandbox.processes):
            await process.wait()
        remove_tree(sandbox.root)

    async def set_ttl(self, sandbox_id, ttl_ms):
        check_id(sandbox_id)
        if ttl_ms == 0:
            raise invalid("ttl must be positive")
        sandbox = self.sandbox(sandbox_id)
        self.arm_ttl(sandbox, ttl_ms)
        return sandbox.record()

    # ---- commands ----

    async def start_process(self, sandbox_id, request, streamed):
        """Checks an exec request and starts its command; returns the sandbox and the process."""
        check_id(sandbox_id)
        check_exec(request, streamed)
        sandbox = self.sandbox(sandbox_id)
        env = dict(BASE_ENV)
        env.update(sandbox.env)
        env.update(request.get("env", {}))
        cwd = request.get("cwd") or "/"
        argv = [sys.executable, "-I", "-S", JAIL, sandbox.root, cwd] + list(request["argv"])
        process = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=env, start_new_session=True, limit=1 << 20)
        sandbox.processes.add(process)
        return sandbox, process

    async def exec(self, sandbox_id, request):
        stdin = request.get("stdin", {"type": "empty"})
        data = unb64(stdin.get("data", ""), "request.stdin.data") if stdin.get("type") == "bytes" else b""
        sandbox, process = await self.start_process(sandbox_id, request, streamed=False)
        timeout = request.get("timeout_ms")
        try:
            stdout, stderr = b"", b""
            communicate = asyncio.ensure_future(process.communicate(data))
            try:
                stdout, stderr = await asyncio.wait_for(asyncio.shield(communicate),
                                                        timeout / 1000 if timeout else None)
                code = exit_status(process.returncode)
            except asyncio.TimeoutError:
                kill(process)
                stdout, stderr = await communicate
                code = EXIT_TIMEOUT
        finally:
            sandbox.processes.discard(process)
        return {"exit_code": code, "stdout": b64(stdout), "stderr": b64(stderr)}

    # ---- files ----

    async def write_file(self, sandbox_id, path, data_b64):
        check_id(sandbox_id)
        check_path(path)
        data = unb64(data_b64, "data")
        if len(data) > MAX_WRITE_BYTES:
            raise invalid(f"the content is {len(data)} bytes, more than the limit of {MAX_WRITE_BYTES}")
        host = self.sandbox(sandbox_id).host_path(path)
        if os.path.isdir(host):
            raise invalid(f"{cut(path)} is a directory")
        try:
            os.makedirs(os.path.dirname(host), exist_ok=True)
            with open(host, "wb") as f:
                f.write(data)
        except (NotADirectoryError, FileExistsError):
            raise invalid(f"a parent of {cut(path)} is not a directory")

    async def read_file(self, sandbox_id, path, max_bytes):
        check_id(sandbox_id)
        check_path(path)
        host = self.sandbox(sandbox_id).host_path(path)
        cap = min(max_bytes, MAX_READ_BYTES)
        try:
            st = os.stat(host)
            if stat.S_ISDIR(st.st_mode):
                raise invalid(f"{cut(path)} is a directory")
            if st.st_size > cap:
                raise invalid(f"{cut(path)} is {st.st_size} bytes, more than the cap of {cap}")
            with open(host, "rb") as f:
                data = f.read(cap + 1)
        except (FileNotFoundError, NotADirectoryError):
            raise ProviderError("not_found", f"{cut(path)} does not exist")
        if len(data) > cap:
            raise invalid(f"{cut(path)} is more than the cap of {cap} bytes")
        return b64(data)

    async def list_dir(self, sandbox_id, path):
        check_id(sandbox_id)
        check_path(path)
        host = self.sandbox(sandbox_id).host_path(path)
        try:
            names = os.listdir(host)
        except FileNotFoundError:
            raise ProviderError("not_found", f"{cut(path)} does not exist")
        except NotADirectoryError:
            if os.path.exists(host):
                raise invalid(f"{cut(path)} is not a directory")
            raise ProviderError("not_found", f"{cut(path)} does not exist")
        base = path.rstrip("/")
        names.sort(key=os.fsencode)
        return [file_info(f"{base}/{name}", os.path.join(host, name)) for name in names]

    async def stat(self, sandbox_id, path):
        check_id(sandbox_id)
        check_path(path)
        host = self.sandbox(sandbox_id).host_path(path, follow_last=False)
        try:
            return file_info(path, host)
        except (FileNotFoundError, NotADirectoryError):
            raise ProviderError("not_found", f"{cut(path)} does not exist")

    async def mkdir(self, sandbox_id, path):
        check_id(sandbox_id)
        check_path(path)
        host = self.sandbox(sandbox_id).host_path(path)
        if os.path.isdir(host):
            return
        try:
            os.makedirs(host)
        except (FileExistsError, NotADirectoryError):
            raise invalid(f"something that is not a directory is in the way of {cut(path)}")

    async def close(self):
        for sandbox_id in list(self.sandboxes):
            await self.delete(sandbox_id)


def kill(process):
    """Ends a command and everything it started (its process group)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
