"""An OTLP/HTTP receiver for the trace tests: decodes what agentd exports with the official
`opentelemetry-proto` classes and serves it back as JSON.

  POST /v1/traces   ExportTraceServiceRequest (application/x-protobuf) -> kept
  POST /v1/metrics  ExportMetricsServiceRequest -> the metric names kept
  GET  /spans       every span so far: trace_id, span_id, parent_span_id (hex), name, kind,
                    start/end (ns), attributes, events, status, service (resource service.name)
  GET  /metrics     {"names": [...], "points": {name: [attributes, ...]}}
  GET  /requests    how many export requests arrived, and their content types

Usage: receiver.py [PORT] (0 or none: a free port; prints "listening on PORT" once it listens).
"""
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

LOCK = threading.Lock()
SPANS = []
METRICS = {}
REQUESTS = []


def value_of(any_value):
    kind = any_value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [value_of(v) for v in any_value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: value_of(kv.value) for kv in any_value.kvlist_value.values}
    return getattr(any_value, kind)


def attributes(kvs):
    return {kv.key: value_of(kv.value) for kv in kvs}


def decode_traces(body):
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    spans = []
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append({
                    "trace_id": span.trace_id.hex(),
                    "span_id": span.span_id.hex(),
                    "parent_span_id": span.parent_span_id.hex() or None,
                    "name": span.name,
                    "kind": span.kind,
                    "start": span.start_time_unix_nano,
                    "end": span.end_time_unix_nano,
                    "attributes": attributes(span.attributes),
                    "events": [{"name": e.name, "attributes": attributes(e.attributes)} for e in span.events],
                    "status": {"code": span.status.code, "message": span.status.message},
                    "service": resource.get("service.name"),
                    "scope": scope_spans.scope.name,
                })
    return spans


def decode_metrics(body):
    request = ExportMetricsServiceRequest()
    request.ParseFromString(body)
    found = {}
    for resource_metrics in request.resource_metrics:
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                data = MessageToDict(metric)
                points = []
                for kind in ("histogram", "sum", "gauge"):
                    for point in data.get(kind, {}).get("dataPoints", []):
                        points.append({a["key"]: list(a["value"].values())[0] for a in point.get("attributes", [])})
                found.setdefault(metric.name, []).extend(points)
    return found


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def reply(self, status, body, content_type="application/json"):
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        with LOCK:
            REQUESTS.append({"path": self.path, "content_type": self.headers.get("content-type")})
        if self.headers.get("content-type") != "application/x-protobuf":
            return self.reply(415, b'{"error": "expected application/x-protobuf"}')
        try:
            if self.path == "/v1/traces":
                spans = decode_traces(body)
                with LOCK:
                    SPANS.extend(spans)
                return self.reply(200, ExportTraceServiceResponse().SerializeToString(), "application/x-protobuf")
            if self.path == "/v1/metrics":
                found = decode_metrics(body)
                with LOCK:
                    for name, points in found.items():
                        METRICS.setdefault(name, []).extend(points)
                return self.reply(200, b"", "application/x-protobuf")
        except Exception as error:  # a body the official classes cannot decode fails the test
            return self.reply(400, json.dumps({"error": str(error)}).encode())
        return self.reply(404, b"{}")

    def do_GET(self):
        with LOCK:
            if self.path == "/spans":
                return self.reply(200, json.dumps(SPANS).encode())
            if self.path == "/metrics":
                return self.reply(200, json.dumps({"names": sorted(METRICS), "points": METRICS}).encode())
            if self.path == "/requests":
                return self.reply(200, json.dumps(REQUESTS).encode())
        return self.reply(404, b"{}")


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"listening on {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
