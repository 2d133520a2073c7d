#!/usr/bin/env python3
"""wordfreq-py: a Sortie worker written in Python 3 (standard library only).

It speaks both worker protocols of the "exec:" runtime, and tells them
apart by its first line on stdin:

- sortie.invocation/v1, one process per attempt: the line is the
  invocation ("version": "sortie.invocation/v1"); the worker runs it and
  exits.
- sortie.session/v1, a warm worker (the runtimes file says
  "protocol": "sortie.session/v1"): every line is a frame,
  {"invoke": {"invocation": ..., "config": {...}}} or
  {"cancel": {"launch_id": ...}}; the worker runs one invoked attempt after
  another in this one process until stdin ends. A cancel of the attempt in
  progress makes it stop at its next progress point and answer with an
  error of type "cancelled".

Each attempt takes the variable "text" (a string) and optionally "top"
(how many words to list, 1-100, default 10), writes progress events
(without seq: the runtime numbers them) and then exactly one result, or an
error for bad input, to stdout, one JSON object a line. Logs go to stderr,
never stdout.
"""

import collections
import json
import queue
import re
import sys
import threading

WORD = re.compile(r"[^\W\d_]+(?:['\u2019][^\W\d_]+)*")
LINES_PER_EVENT = 2000


class Cancelled(Exception):
    """The host cancelled the attempt in progress."""


def send(message):
    """Writes one message as a JSON line and flushes it."""
    sys.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def log(text):
    sys.stderr.write("wordfreq-py: " + text + "\n")
    sys.stderr.flush()


def fail(message, kind="invalid_argument", retryable=False):
    send({"error": {"type": kind, "message": message, "retryable": retryable}})


def parse_line(line):
    try:
        value = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ValueError("not a JSON line: %s" % e)
    if not isinstance(value, dict):
        raise ValueError("not a JSON object")
    return value


def variables_of(invocation):
    """Returns (text, top) or raises ValueError naming the bad field."""
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


def count(text, cancelled):
    counts = collections.Counter()
    lines = text.splitlines()
    send({"event": {"kind": "progress", "text": "counting words in %d lines" % len(lines)}})
    for i, line in enumerate(lines, 1):
        counts.update(w.lower() for w in WORD.findall(line))
        if i % LINES_PER_EVENT == 0:
            if cancelled.is_set():
                raise Cancelled()
            send({"event": {"kind": "progress", "text": "%d of %d lines" % (i, len(lines)),
                            "data": {"lines": i, "words": sum(counts.values())}}})
    return counts


def attempt(invocation, cancelled):
    """Runs one attempt and writes its messages, ending with exactly one
    result or error."""
    try:
        text, top = variables_of(invocation)
        counts = count(text, cancelled)
    except ValueError as e:
        log(str(e))
        fail(str(e))
        return
    except Cancelled:
        fail("cancelled by the host", kind="cancelled")
        return
    ranked = sorted(counts.items(), key=lambda wc: (-wc[1], wc[0]))[:top]
    words = sum(counts.values())
    send({"event": {"kind": "progress", "text": "counted %d words, %d distinct" % (words, len(counts))}})
    send({"result": {"output": {"words": words, "top": [[w, c] for w, c in ranked]}}})


def serve_session(first):
    """The sortie.session/v1 loop: a reader thread takes the frames, so a
    cancel reaches the attempt in progress."""
    attempts = queue.Queue()

    def read():
        current = (None, threading.Event())  # launch ID, its cancel
        line = first
        while line:
            try:
                frame = parse_line(line)
            except ValueError as e:
                log("session: %s" % e)
                break
            if "cancel" in frame:
                if (frame["cancel"] or {}).get("launch_id") == current[0]:
                    current[1].set()
            else:
                invocation = (frame.get("invoke") or {}).get("invocation")
                launch_id = invocation.get("launch_id") if isinstance(invocation, dict) else None
                current = (launch_id, threading.Event())
                attempts.put((invocation, current[1]))
            line = sys.stdin.buffer.readline()
        attempts.put(None)  # stdin ended (the host is gone) or a bad frame

    threading.Thread(target=read, daemon=True).start()
    while True:
        item = attempts.get()
        if item is None:
            return 0
        attempt(*item)


def main():
    first = sys.stdin.buffer.readline()
    try:
        value = parse_line(first)
    except ValueError as e:
        fail("invocation: %s" % e)
        return 0
    if "invoke" in value or "cancel" in value:
        return serve_session(first)
    attempt(value, threading.Event())
    return 0


if __name__ == "__main__":
    sys.exit(main())
