"""A writer process for the multi-process and crash tests of tests/test_store_processes.py.

``python store_worker.py URL RULES_FILE NAME COUNT [SHARED]``: COUNT transactions, each
inserting ``member(NAME-i, eng)`` and ``level(NAME-i, i)`` (and, with SHARED, a row every
worker inserts, then retracts every third time), printing ``ack I REVISION`` after each
commit returns.
"""

from __future__ import annotations

import sys

import grantlog


def main() -> None:
    url, rules, name, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    shared = len(sys.argv) > 5
    program = grantlog.compile(paths=[rules])
    with grantlog.Reasoner(program, store=url, follow=False) as r:
        print("ready", flush=True)
        for i in range(count):
            with r.transaction() as tx:
                tx.insert("member", [(f"{name}-{i}", "eng")])
                tx.insert("level", [(f"{name}-{i}", i)])
                if shared:
                    if i % 3 == 2:
                        tx.retract("member", [("shared", "eng")])
                    else:
                        tx.insert("member", [("shared", "eng")])
            print(f"ack {i} {tx.revision}", flush=True)


if __name__ == "__main__":
    main()
