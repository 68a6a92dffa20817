"""Writes the error table's vector (errors.json): errors as each host meets them, by what
they carry (an errno name, a client library's code, the names of their type, a status, a
gRPC code, a cause), and the outcome every host's classifier must give. The expected
outcomes are written here, independently of the core's table. Run: python3 generate.py."""
import json, os

OUT = os.path.dirname(os.path.abspath(__file__))
CASES = []


def case(why, error, outcome):
    CASES.append({"why": why, "error": error, "outcome": outcome})


def chain(depth, leaf):
    error = leaf
    for _ in range(depth - 1):
        error = {"cause": error}
    return error


CONN, TIMEOUT = "connection-error", "timeout"
for n in ["ECONNREFUSED", "ECONNRESET", "ECONNABORTED", "ENOTCONN", "EPIPE", "EADDRNOTAVAIL",
          "EHOSTUNREACH", "EHOSTDOWN", "ENETUNREACH", "ENETDOWN"]:
    case(f"errno {n}: the connection failed", {"errno": n}, CONN)
case("errno ETIMEDOUT: the kernel gave up waiting, a timeout in every host", {"errno": "ETIMEDOUT"}, TIMEOUT)
case("errno EINTR: the call was interrupted, no evidence either way", {"errno": "EINTR"}, "cancelled")
case("errno ENOENT says nothing about the upstream", {"errno": "ENOENT"}, "failure")
case("errno EACCES says nothing about the upstream", {"errno": "EACCES"}, "failure")
for n in ["ENOTFOUND", "EAI_AGAIN"]:
    case(f"Node's name-lookup code {n}", {"errno": n}, CONN)
for n in ["UND_ERR_SOCKET", "UND_ERR_CONNECT_TIMEOUT", "UND_ERR_CLOSED"]:
    case(f"undici's {n}: a socket failure", {"code": n}, CONN)
for n in ["UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT", "ABORT_ERR_TIMEOUT"]:
    case(f"{n}: the call took too long", {"code": n}, TIMEOUT)
case("an unknown code says nothing", {"code": "ERR_SOMETHING_ELSE"}, "failure")
KINDS = {
    TIMEOUT: ["TimeoutError", "TimedOut", "WouldBlock", "asyncio.TimeoutError", "requests.Timeout",
              "httpx.TimeoutException", "httpcore.TimeoutException", "urllib3.TimeoutError",
              "aiohttp.ServerTimeoutError", "aiohttp.ConnectionTimeoutError", "aiohttp.SocketTimeoutError"],
    CONN: ["ConnectionError", "socket.gaierror", "ConnectionRefused", "ConnectionReset", "ConnectionAborted",
           "NotConnected", "AddrNotAvailable", "BrokenPipe", "HostUnreachable", "NetworkUnreachable",
           "NetworkDown", "requests.ConnectionError", "httpx.NetworkError", "httpx.RemoteProtocolError",
           "httpcore.NetworkError", "httpcore.RemoteProtocolError", "urllib3.NewConnectionError",
           "urllib3.ProtocolError", "urllib3.MaxRetryError", "aiohttp.ClientConnectionError"],
    "cancelled": ["AbortError", "Interrupted"],
    "failure": ["Other", "PermissionDenied", "ValueError"],
}
for outcome, names in KINDS.items():
    for n in names:
        case(f"an error of kind {n}", {"kind": [n]}, outcome)
case("a kind that is a connection error and a timeout (requests.ConnectTimeout) is a timeout",
     {"kind": ["requests.ConnectionError", "requests.Timeout"]}, TIMEOUT)
case("aiohttp.ServerTimeoutError is a connection error and a timeout: a timeout",
     {"kind": ["aiohttp.ClientConnectionError", "aiohttp.ServerTimeoutError"]}, TIMEOUT)
case("an error with no name says nothing", {}, "failure")
for s, o in [(503, "status:503"), (404, "status:404"), (100, "status:100"), (599, "status:599"),
             (600, "failure"), (99, "failure")]:
    case(f"an error that carries HTTP status {s}", {"status": s}, o)
for g, o in [(14, "grpc:14"), (0, "grpc:0"), (16, "grpc:16"), (17, "failure")]:
    case(f"a gRPC error with code {g}", {"grpc": g}, o)
case("a status decides before the names the same error carries", {"status": 503, "errno": "ECONNRESET"}, "status:503")
case("the cause decides when the error says nothing (fetch's TypeError around a refused socket)",
     {"cause": {"errno": "ECONNREFUSED"}}, CONN)
case("the first error that says something decides", {"code": "UND_ERR_SOCKET", "cause": {"errno": "ETIMEDOUT"}}, CONN)
case("a status on the error decides before its cause", {"status": 503, "cause": {"errno": "ECONNREFUSED"}}, "status:503")
case("the eighth error of a chain (max-causes, the error itself included) is read",
     chain(8, {"errno": "ECONNRESET"}), CONN)
case("the ninth is not", chain(9, {"errno": "ECONNRESET"}), "failure")

vector = {
    "name": "errors",
    "description": "How a failed call's error reads to the breaker, in every host: the names an error "
    "carries (an errno name, a client library's code, the names of its type), a status or gRPC code it "
    "carries, and its chain of causes, read at most max-causes deep. Each host builds the error in its own "
    "shape from `error` (keys: errno, code, kind: the type names it carries, status, grpc, cause) and "
    "classifies it with its public classifier; a host skips only what its errors cannot carry, and counts it.",
    "spec": ["SPEC.md Outcomes: errors"],
    "max-causes": 8,
    "cases": CASES,
}
with open(f"{OUT}/errors.json", "w") as f:
    f.write(json.dumps(vector, indent=1) + "\n")
print(len(CASES), "cases")
