"""An exec worker that stops cleanly on SIGTERM: it reports an event and an
error message, then exits."""
import json
import signal
import sys
import time


def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()


def stop(signum, frame):
    send({"event": {"kind": "stopping", "text": "got SIGTERM"}})
    send({"error": {"type": "stopped", "message": "stopped on SIGTERM", "retryable": True}})
    sys.exit(0)


signal.signal(signal.SIGTERM, stop)
sys.stdin.readline()
send({"event": {"kind": "started"}})
while True:
    time.sleep(1)
