# Copyright The sandbox-apiserver Authors.
# SPDX-License-Identifier: Apache-2.0
"""Times a warm create_sandbox plus one commands.run, one after the other, with the sync client;
prints the durations (seconds) as a JSON list. Run by test/bench/python_test.go (make bench)."""

from __future__ import annotations

import argparse
import json
import time

import sandbox_apiserver as sdk


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--pool", required=True)
    parser.add_argument("--runs", type=int, default=100)
    args = parser.parse_args()
    durations = []
    with sdk.SandboxClient(kubeconfig=args.kubeconfig, namespace=args.namespace) as client:
        for _ in range(args.runs):
            start = time.perf_counter()
            sandbox = client.create_sandbox(warmpool=args.pool)
            result = sandbox.commands.run("echo ok")
            durations.append(time.perf_counter() - start)
            if result.stdout != "ok\n":
                raise SystemExit(f"commands.run printed {result.stdout!r}")
            # Deleting is not timed.
            sandbox.terminate()
    print(json.dumps(durations))


if __name__ == "__main__":
    main()
