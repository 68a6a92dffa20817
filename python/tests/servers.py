"""Real services on 127.0.0.1 for the classification tests: an HTTP server whose paths
choose the answer, a port nothing listens on, and a gRPC server that fails on demand."""

import http.server
import socket
import threading


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path.startswith("/status/"):
            status = int(self.path.rsplit("/", 1)[1])
            body = b"status\n"
        elif self.path == "/stall":
            # Holds the request until the test ends (the client's timeout fires first).
            self.server.release.wait(10)
            status, body = 200, b"late\n"
        else:
            status, body = 200, b"ok\n"
        try:
            self.send_response(status)
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
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

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
    status code named in the request (b"14": UNAVAILABLE). Returns (server, target)."""
    import grpc
    from concurrent import futures

    codes = {c.value[0]: c for c in grpc.StatusCode}

    def fail(request, context):
        context.abort(codes[int(request)], "as asked")

    handler = grpc.method_handlers_generic_handler(
        "tripgate.Test", {"Fail": grpc.unary_unary_rpc_method_handler(fail)}
    )
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, f"127.0.0.1:{port}"
