#!/usr/bin/env bash
# Install the official OpenTelemetry protocol package (PyPI `opentelemetry-proto`, with protobuf;
# pinned with hashes) into target/otel-venv for the trace tests' OTLP receiver
# (tests/otel/receiver.py). Does nothing when it is installed at the pinned versions; fails loudly
# without python3 (with venv). scripts/test.sh runs it.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=tests/otel
venv=target/otel-venv

command -v python3 >/dev/null 2>&1 || { echo "tests/otel/setup.sh: python3 (3.10+, with venv) is required" >&2; exit 1; }
if ! cmp -s "$here/requirements.txt" "$venv/requirements.txt" 2>/dev/null; then
  echo "tests/otel/setup.sh: installing opentelemetry-proto into $venv" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check --require-hashes -r "$here/requirements.txt"
  cp "$here/requirements.txt" "$venv/requirements.txt"
fi
"$venv/bin/python" -c "from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest" || {
  echo "tests/otel/setup.sh: opentelemetry-proto does not import" >&2; exit 1; }
