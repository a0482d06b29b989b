#!/usr/bin/env python3
"""An example sandbox provider in Python (standard library only) speaking the sandbox provider
protocol (conformance/protocol/PROTOCOL.md), over stdio or over WebSocket.

    python3 provider.py [--root DIR]                      # stdio: one JSON-RPC message per line
    python3 provider.py --listen 127.0.0.1:0 [--root DIR] # WebSocket; prints ws://HOST:PORT first

Each sandbox is a directory of its own under DIR (a fresh temporary directory by default,
removed on exit); commands are local processes that see that directory as `/` (see jail.py).
It declares exec, exec.stream, files, stdin and ttl, and answers unsupported_operation for the
rest. Run the conformance suite against it with the runner:

    cargo run --release -p conformance-runner -- --provider-cmd 'python3 provider.py'
"""

import argparse
import asyncio
import base64
import json
import os
import shutil
import signal
import sys
import tempfile
import traceback

import sandboxes
import wsserver
from sandboxes import ProviderError, b64, unb64, unsupported

PROTOCOL_VERSION = "1"
MAX_MESSAGE_BYTES = 64 << 20
UNSUPPORTED = ("stop", "start", "pause", "resume", "snapshot", "fork", "expose_port")

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = -32700, -32600, -32601, -32602, -32603
PROVIDER_ERROR, UNSUPPORTED_VERSION, NOT_INITIALIZED = -32000, -32001, -32002


def log(text):
    print(f"python-provider: {text}", file=sys.stderr, flush=True)


class BadParams(Exception):
    """The params do not fit the method."""


class MethodNotFound(Exception):
    """No such method."""


class Connection:
    """One runner: the messages it sends, and the streamed commands it watches."""

    def __init__(self, provider, send):
        self.provider = provider
        self.send = send  # async function taking a message (a dict)
        self.initialized = False
        self.sessions = {}
        self.tasks = set()

    def spawn(self, coroutine):
        task = asyncio.get_running_loop().create_task(coroutine)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def receive(self, text):
        """Handles one message; requests run as tasks of their own, notifications at once."""
        try:
            message = json.loads(text)
        except ValueError as e:
            await self.error(None, PARSE_ERROR, f"not JSON: {e}")
            return
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            await self.error(None, INVALID_REQUEST, "not a JSON-RPC 2.0 message")
            return
        method = message.get("method")
        params = message.get("params", {})
        if method is None:
            return  # a response: the runner answers nothing we asked
        if "id" not in message:
            self.notification(method, params)
            return
        request_id = message["id"]
        if method == "initialize":
            await self.initialize(request_id, params)
        elif not self.initialized:
            await self.error(request_id, NOT_INITIALIZED, "the first request must be initialize")
        else:
            self.spawn(self.request(request_id, method, params))

    async def initialize(self, request_id, params):
        if PROTOCOL_VERSION not in params.get("protocol_versions", []):
            await self.error(request_id, UNSUPPORTED_VERSION,
                             f"this provider speaks protocol version {PROTOCOL_VERSION} only",
                             {"supported": [PROTOCOL_VERSION]})
            return
        self.initialized = True
        await self.result(request_id, {"protocol_version": PROTOCOL_VERSION, "provider": self.provider.info()})

    async def request(self, request_id, method, params):
        try:
            if method == "exec_stream":
                await self.exec_stream(request_id, params)
                return
            await self.result(request_id, await self.call(method, params))
        except ProviderError as e:
            await self.error(request_id, PROVIDER_ERROR, e.message, {"code": e.code})
        except MethodNotFound:
            await self.error(request_id, METHOD_NOT_FOUND, f"no method {method!r}")
        except BadParams as e:
            await self.error(request_id, INVALID_PARAMS, str(e), {"code": "invalid_request"})
        except (KeyError, TypeError, AttributeError) as e:
            await self.error(request_id, INVALID_PARAMS, f"malformed params: {type(e).__name__} {e}",
                             {"code": "invalid_request"})
        except Exception as e:  # a bug of this provider: say so, without the details
            log(f"{method} failed: {traceback.format_exc()}")
            await self.error(request_id, PROVIDER_ERROR, f"{method} failed inside the provider ({type(e).__name__})",
                             {"code": "internal"})

    async def call(self, method, params):
        p = self.provider
        if method == "info":
            return {"info": p.info()}
        if method == "health":
            return {"health": p.health()}
        if method == "create":
            return {"sandbox": await p.create(params["request"])}
        if method == "get":
            return {"sandbox": await p.get(params["id"])}
        if method == "list":
            return {"sandboxes": await p.list()}
        if method == "delete":
            await p.delete(params["id"])
            return {}
        if method == "exec":
            return await p.exec(params["id"], params["request"])
        if method == "write_file":
            await p.write_file(params["id"], params["path"], params["data"])
            return {}
        if method == "read_file":
            return {"data": await p.read_file(params["id"], params["path"], params["max_bytes"])}
        if method == "list_dir":
            return {"entries": await p.list_dir(params["id"], params["path"])}
        if method == "stat":
            return {"file": await p.stat(params["id"], params["path"])}
        if method == "mkdir":
            await p.mkdir(params["id"], params["path"])
            return {}
        if method == "set_ttl":
            return {"sandbox": await p.set_ttl(params["id"], params["ttl_ms"])}
        if method in UNSUPPORTED:
            raise unsupported(method)
        raise MethodNotFound(method)

    async def exec_stream(self, request_id, params):
        name = params["session"]
        if not isinstance(name, str) or not name or name in self.sessions:
            raise BadParams("params.session is empty or names a session already open")
        request = params["request"]
        stdin = request.get("stdin", {"type": "empty"})
        data = unb64(stdin.get("data", ""), "request.stdin.data") if stdin.get("type") == "bytes" else None
        sandbox, process = await self.provider.start_process(params["id"], request, streamed=True)
        session = Session(self, name, sandbox, process, request.get("timeout_ms"))
        self.sessions[name] = session
        await self.result(request_id, {})
        if stdin.get("type") == "streamed":
            self.spawn(session.feed_stdin())
        else:
            session.stdin_queue.put_nowait(data or b"")
            session.stdin_queue.put_nowait(None)
            self.spawn(session.feed_stdin())
        self.spawn(session.run())

    def notification(self, method, params):
        session = self.sessions.get(params.get("session")) if isinstance(params, dict) else None
        if session is None:
            return
        if method == "exec/stdin":
            try:
                session.stdin_queue.put_nowait(unb64(params.get("data", ""), "data"))
            except ProviderError:
                log("exec/stdin with data that is not base64; ignored")
        elif method == "exec/close_stdin":
            session.stdin_queue.put_nowait(None)
        elif method == "exec/cancel":
            session.cancel()

    async def result(self, request_id, result):
        await self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    async def error(self, request_id, code, message, data=None):
        error = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        await self.send({"jsonrpc": "2.0", "id": request_id, "error": error})

    async def notify(self, method, params):
        await self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def close(self):
        for session in list(self.sessions.values()):
            session.cancel()
        for task in list(self.tasks):
            task.cancel()


class Session:
    """A streamed command: its output as notifications, then exactly one exit."""

    def __init__(self, connection, name, sandbox, process, timeout_ms):
        self.connection = connection
        self.name = name
        self.sandbox = sandbox
        self.process = process
        self.timeout_ms = timeout_ms
        self.stdin_queue = asyncio.Queue()
        self.cancelled = False

    async def feed_stdin(self):
        stdin = self.process.stdin
        try:
            while True:
                data = await self.stdin_queue.get()
                if data is None:
                    break
                if data:
                    stdin.write(data)
                    await stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            try:
                stdin.close()
            except (BrokenPipeError, ConnectionResetError):
                pass

    async def pump(self, stream, name):
        while True:
            chunk = await stream.read(65536)
            if not chunk:
                return
            if not self.cancelled:
                await self.connection.notify("exec/output", {"session": self.name, "stream": name, "data": b64(chunk)})

    async def run(self):
        process = self.process
        pumps = asyncio.gather(self.pump(process.stdout, "stdout"), self.pump(process.stderr, "stderr"))
        timed_out = False
        try:
            timeout = self.timeout_ms / 1000 if self.timeout_ms else None
            try:
                await asyncio.wait_for(asyncio.shield(pumps), timeout)
            except asyncio.TimeoutError:
                timed_out = True
                sandboxes.kill(process)
                await pumps
            await process.wait()
        finally:
            self.sandbox.processes.discard(process)
            self.connection.sessions.pop(self.name, None)
            self.stdin_queue.put_nowait(None)  # ends feed_stdin if the runner never closed it
        if self.cancelled:
            return
        code = sandboxes.EXIT_TIMEOUT if timed_out else sandboxes.exit_status(process.returncode)
        await self.connection.notify("exec/exit", {"session": self.name, "exit_code": code})

    def cancel(self):
        self.cancelled = True
        self.stdin_queue.put_nowait(None)
        sandboxes.kill(self.process)


async def serve_stdio(provider):
    """Serves one runner on stdin and stdout, one message per line, until end of input."""
    loop = asyncio.get_running_loop()
    try:
        reader = asyncio.StreamReader(limit=MAX_MESSAGE_BYTES)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        readline = reader.readline
    except ValueError:  # a regular file: read it in a thread
        def readline():
            return loop.run_in_executor(None, sys.stdin.buffer.readline)
    try:
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, sys.stdout)
        writer = asyncio.StreamWriter(transport, protocol, None, loop)

        async def send(message):
            writer.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
            await writer.drain()
    except ValueError:  # a regular file: write it directly
        async def send(message):
            sys.stdout.buffer.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
            sys.stdout.buffer.flush()

    connection = Connection(provider, send)
    while True:
        line = await readline()
        if not line:
            break
        line = line.strip()
        if line:
            await connection.receive(line.decode("utf-8", "replace"))
    # Let the answers to the last requests go out before closing.
    if connection.tasks:
        await asyncio.wait(list(connection.tasks), timeout=5)
    connection.close()


async def serve_websocket(provider, listen):
    host, _, port = listen.rpartition(":")

    async def on_connection(socket):
        async def send(message):
            await socket.send_text(json.dumps(message, separators=(",", ":")))

        connection = Connection(provider, send)
        try:
            async for text in socket.messages():
                await connection.receive(text)
        finally:
            connection.close()

    server = await wsserver.serve(host or "127.0.0.1", int(port), on_connection, MAX_MESSAGE_BYTES)
    bound = server.sockets[0].getsockname()
    print(f"ws://{bound[0]}:{bound[1]}", flush=True)
    stop = asyncio.get_running_loop().create_future()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, lambda: stop.done() or stop.set_result(None))
    async with server:
        await stop


async def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--listen", metavar="HOST:PORT", help="serve WebSocket here instead of stdio")
    parser.add_argument("--root", metavar="DIR", help="make sandboxes under DIR (default: a new temporary directory)")
    args = parser.parse_args()
    own_root = args.root is None
    root = tempfile.mkdtemp(prefix="python-provider-") if own_root else os.path.abspath(args.root)
    os.makedirs(root, exist_ok=True)
    provider = sandboxes.Provider(root)
    problem = await probe(provider)
    if problem:
        log(f"cannot run commands in a sandbox here: {problem}")
        return 1
    try:
        if args.listen:
            await serve_websocket(provider, args.listen)
        else:
            await serve_stdio(provider)
    finally:
        await provider.close()
        if own_root:
            shutil.rmtree(root, ignore_errors=True)
    return 0


async def probe(provider):
    """Runs `true` in a scratch sandbox; returns what went wrong, if anything."""
    try:
        await provider.create({"id": "probe"})
        output = await provider.exec("probe", {"argv": ["true"]})
        if output["exit_code"] != 0:
            return base64.b64decode(output["stderr"]).decode("utf-8", "replace").strip()
        return None
    finally:
        await provider.delete("probe")


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
