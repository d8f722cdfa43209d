"""Fail unless schemathesis's run created what the valid examples describe: a kickoff (202), a
batch (202), a crew (201 or 200), an API key (201) and a CrewAI import (201 or 200), as the NDJSON report of `run.sh` records them."""

import json
import sys

WANTED = {
    ("POST", "/v1/kickoffs"): {202},
    ("POST", "/v1/kickoffs/batch"): {202},
    ("PUT", "/v1/crews/{name}"): {200, 201},
    ("POST", "/v1/keys"): {201},
    ("POST", "/v1/crews:import"): {200, 201},
}


def main(path: str) -> int:
    seen = {key: 0 for key in WANTED}
    for line in open(path, encoding="utf-8"):
        event = json.loads(line)
        finished = event.get("ScenarioFinished")
        if not finished:
            continue
        recorder = finished["recorder"]
        for case_id, interaction in recorder.get("interactions", {}).items():
            case = recorder["cases"][case_id]["value"]
            response = interaction.get("response") or {}
            key = (case["method"], case["path"])
            if key in WANTED and response.get("status_code") in WANTED[key]:
                seen[key] += 1
    for (method, path), count in seen.items():
        print(f"schemathesis: {method} {path}: {count} accepted")
    missing = [f"{m} {p}" for (m, p), n in seen.items() if n == 0]
    if missing:
        print(f"schemathesis: FAILED: nothing was accepted by {', '.join(missing)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
