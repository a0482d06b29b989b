"""A minimal WebSocket server (RFC 6455) with asyncio and the standard library: the opening
handshake, text messages (fragmented or not), ping/pong and close. Enough for one JSON-RPC
message per text frame; binary frames are refused.
"""

import asyncio
import base64
import hashlib
import struct

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
OP_CONTINUATION, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
MAX_HEADER_BYTES = 16 * 1024


class ProtocolError(Exception):
    """The peer broke RFC 6455; `code` is the close code to send."""

    def __init__(self, code, reason):
        super().__init__(reason)
        self.code = code


def unmask(data, mask):
    """XORs `data` with the repeated 4-byte `mask`, as one big-integer operation."""
    if not data:
        return data
    key = (mask * (len(data) // 4 + 1))[: len(data)]
    value = int.from_bytes(data, "big") ^ int.from_bytes(key, "big")
    return value.to_bytes(len(data), "big")


class WebSocket:
    """The server's side of one connection."""

    def __init__(self, reader, writer, max_message):
        self.reader = reader
        self.writer = writer
        self.max_message = max_message
        self.lock = asyncio.Lock()
        self.closed = False

    async def send_frame(self, opcode, payload):
        header = bytes([0x80 | opcode])
        n = len(payload)
        if n < 126:
            header += bytes([n])
        elif n < 1 << 16:
            header += bytes([126]) + struct.pack("!H", n)
        else:
            header += bytes([127]) + struct.pack("!Q", n)
        async with self.lock:
            if self.closed and opcode != OP_CLOSE:
                raise ConnectionResetError("the WebSocket is closed")
            self.writer.write(header + payload)
            await self.writer.drain()

    async def send_text(self, text):
        await self.send_frame(OP_TEXT, text.encode("utf-8"))

    async def read_frame(self):
        first, second = await self.reader.readexactly(2)
        fin, opcode = first & 0x80, first & 0x0F
        if first & 0x70:
            raise ProtocolError(1002, "reserved bits set")
        if not second & 0x80:
            raise ProtocolError(1002, "a client frame is not masked")
        length = second & 0x7F
        if length == 126:
            (length,) = struct.unpack("!H", await self.reader.readexactly(2))
        elif length == 127:
            (length,) = struct.unpack("!Q", await self.reader.readexactly(8))
        if length > self.max_message:
            raise ProtocolError(1009, "frame too large")
        mask = await self.reader.readexactly(4)
        data = await self.reader.readexactly(length)
        return bool(fin), opcode, unmask(data, mask)

    async def messages(self):
        """Yields each text message until the peer closes."""
        parts, size = [], 0
        try:
            while True:
                fin, opcode, data = await self.read_frame()
                if opcode == OP_PING:
                    await self.send_frame(OP_PONG, data)
                    continue
                if opcode == OP_PONG:
                    continue
                if opcode == OP_CLOSE:
                    await self.close(1000, echo=data[:2])
                    return
                if opcode == OP_BINARY or (opcode == OP_CONTINUATION and not parts and size == 0 and not fin):
                    raise ProtocolError(1003, "only text messages are accepted")
                if opcode not in (OP_TEXT, OP_CONTINUATION):
                    raise ProtocolError(1002, f"unknown opcode {opcode}")
                parts.append(data)
                size += len(data)
                if size > self.max_message:
                    raise ProtocolError(1009, "message too large")
                if fin:
                    text = b"".join(parts).decode("utf-8", "strict")
                    parts, size = [], 0
                    yield text
        except ProtocolError as e:
            await self.close(e.code)
        except UnicodeDecodeError:
            await self.close(1007)
        except (asyncio.IncompleteReadError, ConnectionResetError):
            return

    async def close(self, code, echo=None):
        if self.closed:
            return
        payload = echo if echo is not None and len(echo) == 2 else struct.pack("!H", code)
        try:
            await self.send_frame(OP_CLOSE, payload)
        except (ConnectionResetError, BrokenPipeError):
            pass
        self.closed = True


async def handshake(reader, writer):
    """Reads the HTTP upgrade request and answers 101; returns whether it succeeded."""
    head = await reader.readuntil(b"\r\n\r\n")
    if len(head) > MAX_HEADER_BYTES:
        return False
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    key = headers.get("sec-websocket-key")
    if not lines[0].startswith("GET ") or "websocket" not in headers.get("upgrade", "").lower() or not key:
        writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        await writer.drain()
        return False
    accept = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
    writer.write(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  f"Sec-WebSocket-Accept: {accept}\r\n\r\n").encode())
    await writer.drain()
    return True


async def serve(host, port, on_connection, max_message):
    """Listens on host:port; runs `on_connection(socket)` for each WebSocket."""

    async def accept(reader, writer):
        try:
            if await handshake(reader, writer):
                await on_connection(WebSocket(reader, writer, max_message))
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionResetError):
            pass
        finally:
            writer.close()

    return await asyncio.start_server(accept, host, port, limit=MAX_HEADER_BYTES)
