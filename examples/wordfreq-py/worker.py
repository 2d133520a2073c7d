#!/usr/bin/env python3
"""wordfreq-py: a Sortie worker written in Python 3 (standard library only).

It speaks the NDJSON worker protocol of the "exec:" runtime: it reads one
invocation (a JSON line, "version": "sortie.invocation/v1") from stdin, takes
the variable "text" (a string) and optionally "top" (how many words to list,
1-100, default 10), writes progress events (without seq: the runtime
numbers them) and then one result to stdout, one JSON object a line. Logs go
to stderr, never stdout. Bad input gets an {"error": ...} message.
"""

import collections
import json
import re
import sys

WORD = re.compile(r"[^\W\d_]+(?:['\u2019][^\W\d_]+)*")
LINES_PER_EVENT = 2000


def send(message):
    """Writes one message as a JSON line and flushes it."""
    sys.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def log(text):
    sys.stderr.write("wordfreq-py: " + text + "\n")
    sys.stderr.flush()


def fail(message, retryable=False):
    send({"error": {"type": "invalid_argument", "message": message, "retryable": retryable}})


def parse_input():
    """Returns (text, top) or raises ValueError naming the bad field."""
    line = sys.stdin.buffer.readline()
    try:
        invocation = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ValueError("invocation: not a JSON line: %s" % e)
    if not isinstance(invocation, dict) or invocation.get("version") != "sortie.invocation/v1":
        raise ValueError('invocation: version must be "sortie.invocation/v1"')
    variables = invocation.get("variables") or {}
    text = variables.get("text")
    if not isinstance(text, str):
        raise ValueError('variables.text: must be a string, got %s' % type(text).__name__)
    top = variables.get("top", 10)
    if isinstance(top, bool) or not isinstance(top, int) or not 1 <= top <= 100:
        raise ValueError("variables.top: must be an integer in 1..100")
    log("run %s attempt %s: %d characters" % (invocation.get("run_id"), invocation.get("attempt"), len(text)))
    return text, top


def count(text):
    counts = collections.Counter()
    lines = text.splitlines()
    send({"event": {"kind": "progress", "text": "counting words in %d lines" % len(lines)}})
    for i, line in enumerate(lines, 1):
        counts.update(w.lower() for w in WORD.findall(line))
        if i % LINES_PER_EVENT == 0:
            send({"event": {"kind": "progress", "text": "%d of %d lines" % (i, len(lines)),
                            "data": {"lines": i, "words": sum(counts.values())}}})
    return counts


def main():
    try:
        text, top = parse_input()
    except ValueError as e:
        log(str(e))
        fail(str(e))
        return 0
    counts = count(text)
    ranked = sorted(counts.items(), key=lambda wc: (-wc[1], wc[0]))[:top]
    words = sum(counts.values())
    send({"event": {"kind": "progress", "text": "counted %d words, %d distinct" % (words, len(counts))}})
    send({"result": {"output": {"words": words, "top": [[w, c] for w, c in ranked]}}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
