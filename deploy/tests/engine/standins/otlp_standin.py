"""Stand-ins for the observability profile's images, which no Debian, PyPI or
npm package provides: an OpenTelemetry collector and Jaeger, each doing what
compose.yaml and otel-collector.yaml use of it, on the real wire protocols
(OTLP's protobuf messages are read with a few lines of wire decoding, so the
images need only Debian's python3-grpcio and python3-yaml).

* `otlp_standin.py collector --config=FILE` reads the collector config: the
  OTLP receiver (HTTP on receivers.otlp.protocols.http.endpoint, protobuf or
  protobuf bodies at /v1/traces, what Weft sends; gRPC on ...grpc.endpoint), the traces pipeline's
  `otlp*` exporters (OTLP gRPC to their endpoint, tls.insecure), and the
  health_check extension (HTTP 200 on its endpoint). Processors are accepted
  and do nothing (batch and memory_limiter change no span).
* `otlp_standin.py jaeger` receives OTLP (gRPC :4317, HTTP :4318), keeps the
  spans in memory, answers its query API on :16686 (GET /api/services,
  GET /api/traces?service=NAME, Jaeger's JSON envelope `{"data": …}`) and its
  health on :13133/status.
"""

import gzip
import json
import sys
import threading
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc
import yaml

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def fields(buf):
    """(field number, value) of one protobuf message: bytes for length-delimited
    fields, int for varints; fixed-width fields are skipped."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        number, kind = key >> 3, key & 7
        if kind == 0:
            value, i = varint(buf, i)
            yield number, value
        elif kind == 2:
            size, i = varint(buf, i)
            yield number, buf[i:i + size]
            i += size
        elif kind == 1:
            i += 8
        elif kind == 5:
            i += 4
        else:
            raise ValueError(f"protobuf wire type {kind}")


def varint(buf, i):
    value = shift = 0
    while True:
        byte = buf[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, i


def spans_by_service(request):
    """ExportTraceServiceRequest -> [(service.name, trace id hex, span name)]."""
    out = []
    for n, resource_spans in fields(request):
        if n != 1:
            continue
        service, spans = "unknown_service", []
        for m, part in fields(resource_spans):
            if m == 1:  # Resource: attributes (KeyValue: key 1, AnyValue 2 with string_value 1)
                for a, kv in fields(part):
                    pairs = dict(fields(kv)) if a == 1 else {}
                    if pairs.get(1) == b"service.name":
                        service = dict(fields(pairs.get(2, b""))).get(1, b"").decode()
            elif m == 2:  # ScopeSpans: spans 2 (Span: trace_id 1, name 5)
                for k, span in fields(part):
                    if k == 2:
                        f = dict(fields(span))
                        spans.append((f.get(1, b"").hex(), f.get(5, b"").decode()))
        out += [(service, trace, name) for trace, name in spans]
    return out


# Servers started; a gRPC server whose object is collected stops serving.
SERVERS = []


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def host_port(endpoint, default_host="0.0.0.0"):
    endpoint = endpoint.split("://", 1)[-1].rstrip("/")
    host, _, port = endpoint.rpartition(":")
    return host or default_host, int(port)


def serve_grpc(endpoint, on_export):
    def export(raw, _context):
        on_export(raw)
        return b""  # an empty ExportTraceServiceResponse

    handler = grpc.method_handlers_generic_handler(
        "opentelemetry.proto.collector.trace.v1.TraceService",
        {"Export": grpc.unary_unary_rpc_method_handler(export)},
    )
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    server.add_generic_rpc_handlers((handler,))
    host, port = host_port(endpoint)
    server.add_insecure_port(f"{host}:{port}")
    server.start()
    SERVERS.append(server)
    log(f"OTLP gRPC on {host}:{port}")


def serve_http(endpoint, routes):
    """routes: {(method, path): fn(handler, body) -> (status, content_type, bytes)}"""

    class Handler(BaseHTTPRequestHandler):
        def handle_one(self, method):
            path = self.path.split("?", 1)[0]
            fn = routes.get((method, path))
            if fn is None:
                self.send_error(404)
                return
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            if self.headers.get("content-encoding") == "gzip":
                body = gzip.decompress(body)
            status, ctype, data = fn(self, body)
            self.send_response(status)
            self.send_header("content-type", ctype)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self.handle_one("GET")

        def do_POST(self):
            self.handle_one("POST")

        def log_message(self, *_):
            pass

    host, port = host_port(endpoint)
    server = ThreadingHTTPServer((host, port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    SERVERS.append(server)
    log(f"HTTP on {host}:{port}")


def otlp_http_traces(on_export):
    def receive(handler, body):
        if not handler.headers.get("content-type", "").startswith("application/x-protobuf"):
            return 415, "text/plain", b"the stand-in takes OTLP/HTTP protobuf only\n"
        on_export(body)
        return 200, "application/x-protobuf", b""

    return receive


def collector(config_path):
    with open(config_path) as f:
        config = yaml.safe_load(f)
    pipeline = config["service"]["pipelines"]["traces"]
    stubs = []
    for name in pipeline["exporters"]:
        spec = config["exporters"][name]
        if not name.split("/")[0] == "otlp":
            sys.exit(f"stand-in collector: exporter {name} is not supported (only otlp)")
        if not (spec.get("tls") or {}).get("insecure"):
            sys.exit(f"stand-in collector: exporter {name} needs tls.insecure (no TLS here)")
        channel = grpc.insecure_channel(spec["endpoint"])
        stubs.append((name, channel.unary_unary(EXPORT)))

    def forward(raw):
        for name, stub in stubs:
            try:
                stub(raw, timeout=10)
            except grpc.RpcError as e:
                log(f"exporter {name}: {e.code()} {e.details()}")

    for receiver in pipeline["receivers"]:
        protocols = config["receivers"][receiver]["protocols"]
        if "grpc" in protocols:
            serve_grpc(protocols["grpc"]["endpoint"], forward)
        if "http" in protocols:
            serve_http(protocols["http"]["endpoint"], {("POST", "/v1/traces"): otlp_http_traces(forward)})
    for ext in config["service"].get("extensions") or []:
        if ext.split("/")[0] == "health_check":
            ok = json.dumps({"status": "Server available"}).encode()
            serve_http(config["extensions"][ext]["endpoint"], {("GET", "/"): lambda h, b: (200, "application/json", ok)})
    log("stand-in collector: everything is ready")
    threading.Event().wait()


def jaeger():
    spans = {}  # service -> {trace id hex -> [span names]}
    lock = threading.Lock()

    def store(raw):
        with lock:
            for service, trace, name in spans_by_service(raw):
                spans.setdefault(service, {}).setdefault(trace, []).append(name)

    def services(_h, _b):
        with lock:
            return 200, "application/json", json.dumps({"data": sorted(spans)}).encode()

    def traces(handler, _b):
        query = dict(p.split("=", 1) for p in handler.path.partition("?")[2].split("&") if "=" in p)
        with lock:
            found = spans.get(query.get("service"), {})
            data = [{"traceID": t, "spans": [{"operationName": n} for n in names]} for t, names in found.items()]
        return 200, "application/json", json.dumps({"data": data}).encode()

    serve_grpc("0.0.0.0:4317", store)
    serve_http("0.0.0.0:4318", {("POST", "/v1/traces"): otlp_http_traces(store)})
    serve_http("0.0.0.0:16686", {("GET", "/api/services"): services, ("GET", "/api/traces"): traces})
    ok = json.dumps({"status": "StatusOK"}).encode()
    serve_http("0.0.0.0:13133", {("GET", "/status"): lambda h, b: (200, "application/json", ok)})
    log("stand-in jaeger: everything is ready")
    threading.Event().wait()


if __name__ == "__main__":
    role = sys.argv[1] if len(sys.argv) > 1 else ""
    if role == "collector":
        paths = [a.split("=", 1)[1] for a in sys.argv[2:] if a.startswith("--config=")]
        collector(paths[0] if paths else "/etc/otelcol-contrib/config.yaml")
    elif role == "jaeger":
        jaeger()
    else:
        sys.exit("usage: otlp_standin.py collector --config=FILE | jaeger")
