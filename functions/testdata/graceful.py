"""An exec worker that stops cleanly on SIGTERM: it reports an event and an
error message, then exits. The handler only sets a flag: writing from a signal
handler can re-enter a flush the signal interrupted (RuntimeError: reentrant
call), which would end the process with status 1 and lose the messages."""
import json
import signal
import sys
import time

stopping = False


def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()


def stop(signum, frame):
    global stopping
    stopping = True


signal.signal(signal.SIGTERM, stop)
sys.stdin.readline()
send({"event": {"kind": "started"}})
while not stopping:
    time.sleep(0.01)
send({"event": {"kind": "stopping", "text": "got SIGTERM"}})
send({"error": {"type": "stopped", "message": "stopped on SIGTERM", "retryable": True}})
