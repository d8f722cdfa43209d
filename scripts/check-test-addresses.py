#!/usr/bin/env python3
"""The tests send traffic to loopback addresses only: fail when a test names another address.

Reads what the tests run (tests/, scripts/, .ci/, the examples they load, and the shell block of
the fake-model guide that CI runs) for IPv4 literals outside 127.0.0.0/8 and for http(s) and
ws(s) URLs whose host is not localhost, 127.x.x.x or [::1]. Not judged: hosts formatted from a
variable (`http://{addr}`, `http://$base`: the tests' own listeners), comment lines (links to
documentation), lockfiles and pinned requirements (package registries, used by the setup scripts
through their own clients).

An address a test must name (the egress guard's refusal of a private address, say) is listed in
EXCEPTIONS with why it is never contacted. Keep that list short and each reason checkable.

Usage: scripts/check-test-addresses.py [repository root]   (default: this script's repository)
"""
import ipaddress
import re
import sys
from pathlib import Path

# (file, address) -> why nothing ever connects to it (nor asks DNS about it).
EXCEPTIONS = {
    ("tests/e2e/webhooks.rs", "10.1.2.3"):
        "a private address the webhook guard refuses at registration: an IP literal is judged "
        "without DNS and before any connection (EgressPolicy::check_url)",
    ("tests/e2e/webhooks.rs", "192.168.0.10"):
        "a private address the webhook guard refuses when the kickoff is checked, before any "
        "connection (EgressPolicy::check_url)",
    ("tests/e2e/knowledge.rs", "169.254.169.254"):
        "the cloud metadata address the tools' guard refuses when the document is posted, before "
        "any fetch (EgressPolicy::check_url)",
    ("tests/e2e/engine/mcp.rs", "169.254.169.254"):
        "the cloud metadata address as an MCP server's URL: the tools' guard (no allow-list in the "
        "test) refuses the IP literal before connecting; the test asserts the refusal",
    ("tests/e2e/local_embeddings.rs", "example.com"):
        "text the local embedding model tokenises (and the reference implementation too), never "
        "requested",
    ("tests/e2e/protocols/conformance.rs", "json-schema.org"):
        "the identifier of JSON Schema draft 2020-12 in a crew's inputs_schema (`$schema`), as the "
        "MCP conformance suite wants it kept; the validator has the draft built in and fetches "
        "nothing",
    ("tests/e2e/protocols/conformance.rs", "evil.example.com"):
        "an Origin header's value (a page of another site) sent to agentd on loopback, which "
        "refuses it; nothing connects to or resolves it",
    ("tests/e2e/protocols/conformance.rs", "agents.example.com"):
        "an Origin header's value and an allowed_origins entry, sent to agentd on loopback; nothing "
        "connects to or resolves it",
    ("tests/e2e/fakes/azure.rs", "aka.ms"):
        "text of the fake Azure OpenAI's error message, as Azure words it; nothing requests it",
}

# This script (it names the exceptions), lockfiles and pinned requirements.
SKIPPED_NAMES = {"check-test-addresses.py", "package-lock.json", "requirements.txt"}
SKIPPED_DIRS = {"node_modules", "__pycache__"}
LOOPBACK_NAMES = {"localhost"}

IPV4 = re.compile(r"(?<![\w.])(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?![\w.])")
URL = re.compile(r"\b(?:https?|wss?)://([^\s/\"'`<>()\\,;]*)", re.IGNORECASE)
COMMENT = re.compile(r"^\s*(//|#(?!!)|<!--|\*)")
CI_MARKER = "<!-- ci: curl-integration-test -->"


def sources(root):
    """(path relative to root, text) of everything the tests run or load."""
    roots = ["tests", "scripts", ".ci", "examples/fake-llm", "examples/agentd-fake.toml"]
    for top in roots:
        base = root / top
        files = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file())
        for path in files:
            rel = path.relative_to(root)
            if path.name in SKIPPED_NAMES or SKIPPED_DIRS.intersection(rel.parts):
                continue
            try:
                yield str(rel), path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue  # binary data (a model's weights, say)
    guide = root / "docs/guides/testing-with-the-fake-model.md"
    block, inside, found = [], False, False
    for line in guide.read_text(encoding="utf-8").splitlines():
        if line == CI_MARKER:
            found = True
        elif found and not inside and line == "```sh":
            inside = True
        elif inside and line == "```":
            break
        elif inside:
            block.append(line)
    yield str(guide.relative_to(root)), "\n".join(block)


def url_host(authority):
    """The host of a URL's authority (no user info, no port); None when built from a variable."""
    if "{" in authority or "$" in authority:
        return None
    host = authority.rsplit("@", 1)[-1]
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.split(":", 1)[0]


def is_loopback(host):
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def findings(root):
    used = set()
    for rel, text in sources(root):
        for number, line in enumerate(text.splitlines(), 1):
            if COMMENT.match(line):
                continue
            named = set()
            for match in IPV4.finditer(line):
                if all(int(part) <= 255 for part in match.groups()):
                    named.add(match.group(0))
            for match in URL.finditer(line):
                host = url_host(match.group(1))
                if host:  # an empty host is a pattern, not an address
                    named.add(host)
            for address in sorted(named):
                if is_loopback(address):
                    continue
                if (rel, address) in EXCEPTIONS:
                    used.add((rel, address))
                else:
                    yield f"{rel}:{number}: {address} is not a loopback address: {line.strip()}"
    for rel, address in sorted(set(EXCEPTIONS) - used):
        yield f"scripts/check-test-addresses.py: the exception for {address} in {rel} names nothing: remove it"


def main():
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent
    found = list(findings(root.resolve()))
    for finding in found:
        print(finding, file=sys.stderr)
    if found:
        print(
            f"check-test-addresses: FAILED: {len(found)} non-loopback address(es) in what the tests run; "
            "point them at a listener the test owns on 127.0.0.1, or list one that is never contacted "
            "in EXCEPTIONS with why",
            file=sys.stderr,
        )
        return 1
    print("check-test-addresses: the tests name loopback addresses only")
    return 0


if __name__ == "__main__":
    sys.exit(main())
