"""Real services on 127.0.0.1 for the classification tests: an HTTP server whose paths
choose the answer (``/status/503?retry-after=60&pushback=250`` adds ``Retry-After`` and
``grpc-retry-pushback-ms``; ``/flaky/<name>?fails=2`` answers 503 twice, then 200, or
holds the request with ``then=stall``) and counts the requests to each path
(``server.hits(path)``), a port nothing listens on, and a gRPC server that fails on
demand."""

import collections
import http.server
import socket
import threading
import urllib.parse

# Query parameters of /status/N that become headers of the answer.
_HEADERS = {"retry-after": "Retry-After", "pushback": "grpc-retry-pushback-ms"}


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        path, _, query = self.path.partition("?")
        params = urllib.parse.parse_qsl(query)
        headers = [(_HEADERS[k], v) for k, v in params if k in _HEADERS]
        with self.server.lock:
            self.server.hits[path] += 1
            seen = self.server.hits[path]
        if path.startswith("/flaky/"):
            flaky = dict(params)
            if seen <= int(flaky.get("fails", "1")):
                status, body = 503, b"status\n"
            elif flaky.get("then") == "stall":
                self.server.release.wait(10)
                status, body = 200, b"late\n"
            else:
                status, body = 200, b"ok\n"
        elif path.startswith("/status/"):
            status = int(path.rsplit("/", 1)[1])
            body = b"status\n"
        elif self.path == "/stall":
            # Holds the request until the test ends (the client's timeout fires first).
            self.server.release.wait(10)
            status, body = 200, b"late\n"
        else:
            status, body = 200, b"ok\n"
        try:
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            pass

    def log_message(self, *args):
        pass


class HttpServer:
    def __init__(self):
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.server.release = threading.Event()
        self.server.hits = collections.Counter()
        self.server.lock = threading.Lock()
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def hits(self, path):
        """The requests that reached ``path`` (without its query) so far."""
        with self.server.lock:
            return self.server.hits[path]

    def close(self):
        self.server.release.set()
        self.server.shutdown()
        self.server.server_close()


def closed_port():
    """A port on 127.0.0.1 that refuses connections."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def grpc_server():
    """A gRPC server with one raw-bytes method, /tripgate.Test/Fail, that aborts with the
    status code named in the request (b"14": UNAVAILABLE; b"14 60000" adds the trailing
    metadata grpc-retry-pushback-ms: 60000). Returns (server, target)."""
    import grpc
    from concurrent import futures

    codes = {c.value[0]: c for c in grpc.StatusCode}

    def fail(request, context):
        code, _, pushback = request.decode().partition(" ")
        if pushback:
            context.set_trailing_metadata((("grpc-retry-pushback-ms", pushback),))
        context.abort(codes[int(code)], "as asked")

    handler = grpc.method_handlers_generic_handler(
        "tripgate.Test", {"Fail": grpc.unary_unary_rpc_method_handler(fail)}
    )
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, f"127.0.0.1:{port}"
