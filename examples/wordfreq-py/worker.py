#!/usr/bin/env python3
"""wordfreq-py: a Sortie worker written in Python 3 (standard library only).

It speaks both worker protocols of the "exec:" runtime, and tells them
apart by its first line on stdin:

- sortie.invocation/v1, one process per attempt: the line is the
  invocation ("version": "sortie.invocation/v1"); the worker runs it and
  exits.
- sortie.session/v1, a warm worker (the runtimes file says
  "protocol": "sortie.session/v1"): every line is a frame,
  {"invoke": {"invocation": ..., "config": {...}}},
  {"cancel": {"launch_id": ...}} or {"step": {"launch_id": ..., "name": ...}};
  the worker runs one invoked attempt after another in this one process
  until stdin ends. A cancel of the attempt in progress makes it stop at
  its next progress point and answer with an error of type "cancelled".

Each attempt takes the variable "text" (a string) and optionally "top"
(how many words to list, 1-100, default 10), writes progress events
(without seq: the runtime numbers them) and then exactly one result, or an
error for bad input, to stdout, one JSON object a line. Logs go to stderr,
never stdout.

The work is three durable steps, "count", "rank" and "summarise". When a
step's work is done the worker reports it with a step message
({"step": {"version": "sortie.step/v1", "name": ..., "result": ...}}); the
host records it before it reads the next line (a session worker waits for
the host's step frame before it goes on). A later attempt of the run (a
retry after a crash, a resume) finds the recorded steps in its invocation
("steps") and uses their results instead of doing the work again. Every
time a step's work runs, the worker emits an event of kind
"wordfreq.step"; a step it replays emits "step.replayed" instead.

To see a retry skip finished steps, "crash_after_step" (a step number,
1-3) with "crash_attempts" (N) makes the process exit with status 97 right
after that step on attempts 1..N, as a crash would.
"""

import collections
import json
import os
import queue
import re
import sys
import threading
import time

WORD = re.compile(r"[^\W\d_]+(?:['\u2019][^\W\d_]+)*")
LINES_PER_EVENT = 2000
STEP_VERSION = "sortie.step/v1"
CRASH_EXIT = 97


class Cancelled(Exception):
    """The host cancelled the attempt in progress."""


class StepRefused(Exception):
    """The host could not record a step."""


def send(message):
    """Writes one message as a JSON line and flushes it."""
    sys.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def log(text):
    sys.stderr.write("wordfreq-py: " + text + "\n")
    sys.stderr.flush()


def fail(message, kind="invalid_argument", retryable=False):
    send({"error": {"type": kind, "message": message, "retryable": retryable}})


def now_ms():
    return int(time.time() * 1000)


def parse_line(line):
    try:
        value = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ValueError("not a JSON line: %s" % e)
    if not isinstance(value, dict):
        raise ValueError("not a JSON object")
    return value


class Steps:
    """The run's durable steps: those the invocation says earlier attempts
    recorded, replayed by name, and new ones reported to the host. acks is
    the queue of the host's step frames (a session worker), None for a
    one-shot worker, whose stdin is closed."""

    def __init__(self, invocation, acks):
        self.done = {s["name"]: s for s in invocation.get("steps") or []}
        self.acks = acks

    def run(self, name, work):
        if name in self.done:
            recorded = self.done[name]
            send({"event": {"kind": "step.replayed", "data": {"name": name, "attempt": recorded.get("attempt")}}})
            return recorded.get("result")
        send({"event": {"kind": "step.started", "data": {"name": name}}})
        started = now_ms()
        result = work()
        send({"step": {"version": STEP_VERSION, "name": name, "result": result,
                       "started_ms": started, "duration_ms": now_ms() - started, "tries": 1}})
        if self.acks is not None:
            answer = self.acks.get()
            if answer.get("error"):
                raise StepRefused("step %s: %s" % (name, answer["error"].get("message")))
        return result


def variables_of(invocation):
    """Returns the variables or raises ValueError naming the bad field."""
    if not isinstance(invocation, dict) or invocation.get("version") != "sortie.invocation/v1":
        raise ValueError('invocation: version must be "sortie.invocation/v1"')
    variables = invocation.get("variables") or {}
    text = variables.get("text")
    if not isinstance(text, str):
        raise ValueError('variables.text: must be a string, got %s' % type(text).__name__)
    top = variables.get("top", 10)
    if isinstance(top, bool) or not isinstance(top, int) or not 1 <= top <= 100:
        raise ValueError("variables.top: must be an integer in 1..100")
    for name, limit in (("crash_after_step", 3), ("crash_attempts", 100)):
        v = variables.get(name, 0)
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= limit:
            raise ValueError("variables.%s: must be an integer in 0..%d" % (name, limit))
    log("run %s attempt %s: %d characters" % (invocation.get("run_id"), invocation.get("attempt"), len(text)))
    return variables


def ran(name):
    send({"event": {"kind": "wordfreq.step", "text": "%s ran" % name, "data": {"name": name}}})


def count(text, cancelled):
    ran("count")
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
    # The most frequent words: enough to rank, small enough to record (a
    # step's result is at most 64 KiB of JSON).
    common = counts.most_common(1000)
    while len(common) > 100 and len(json.dumps(dict(common))) > 48000:
        common = common[:len(common) // 2]
    return {"words": sum(counts.values()), "distinct": len(counts), "counts": dict(common)}


def rank(counted, top):
    ran("rank")
    ranked = sorted(counted["counts"].items(), key=lambda wc: (-wc[1], wc[0]))[:top]
    return [[w, c] for w, c in ranked]


def summarise(counted, ranked):
    ran("summarise")
    return "counted %d words, %d distinct" % (counted["words"], counted["distinct"])


def attempt(invocation, cancelled, acks=None):
    """Runs one attempt and writes its messages, ending with exactly one
    result or error."""
    try:
        variables = variables_of(invocation)
        text, top = variables["text"], variables.get("top", 10)
        crash_after = variables.get("crash_after_step", 0)
        crashing = invocation.get("attempt", 1) <= variables.get("crash_attempts", 0)
        steps = Steps(invocation, acks)

        def checkpoint(n):
            if crashing and n == crash_after:
                log("simulating a crash after step %d" % n)
                os._exit(CRASH_EXIT)

        counted = steps.run("count", lambda: count(text, cancelled))
        checkpoint(1)
        ranked = steps.run("rank", lambda: rank(counted, top))
        checkpoint(2)
        summary = steps.run("summarise", lambda: summarise(counted, ranked))
        checkpoint(3)
    except ValueError as e:
        log(str(e))
        fail(str(e))
        return
    except Cancelled:
        fail("cancelled by the host", kind="cancelled")
        return
    except StepRefused as e:
        fail(str(e), kind="step", retryable=True)
        return
    send({"event": {"kind": "progress", "text": summary}})
    send({"result": {"output": {"words": counted["words"], "top": ranked}}})


def serve_session(first):
    """The sortie.session/v1 loop: a reader thread takes the frames, so a
    cancel or a step frame reaches the attempt in progress."""
    attempts = queue.Queue()

    def read():
        current = (None, threading.Event(), queue.Queue())  # launch ID, its cancel, its step frames
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
            elif "step" in frame:
                if (frame["step"] or {}).get("launch_id") == current[0]:
                    current[2].put(frame["step"])
            else:
                invocation = (frame.get("invoke") or {}).get("invocation")
                launch_id = invocation.get("launch_id") if isinstance(invocation, dict) else None
                current = (launch_id, threading.Event(), queue.Queue())
                attempts.put((invocation, current[1], current[2]))
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
