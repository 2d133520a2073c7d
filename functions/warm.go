package functions

import (
	"errors"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/procstatus"
)

// warm is one session worker process of a [Pool]: its stdin takes frames,
// a reader sends the messages of the attempt in progress, and its stderr
// lines go to that attempt's logger.
type warm struct {
	p     *proc
	stdin *os.File
	msgs  chan lineMessage // the attempt's messages; closed when stdout ends
	gone  chan struct{}    // closed when the pool dropped the process
	log   atomic.Pointer[slog.Logger]

	mu       sync.Mutex
	active   bool   // an attempt is in progress
	launchID string // its launch ID
	broken   string // why the process must take no other attempt
	served   int    // attempts begun
}

// startWarm starts a session worker process of spec; idle logs its
// stderr between attempts.
func startWarm(spec ExecSpec, idle *slog.Logger) (*warm, error) {
	w := &warm{msgs: make(chan lineMessage), gone: make(chan struct{})}
	w.log.Store(idle)
	p, stdin, err := spawnProc(spec, func() *slog.Logger { return w.log.Load() })
	if err != nil {
		return nil, err
	}
	w.p, w.stdin = p, stdin
	go w.read()
	return w, nil
}

func (w *warm) pid() int { return w.p.cmd.Process.Pid }

// launch returns the launch ID of the attempt it holds, or "".
func (w *warm) launch() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.launchID
}

// read sends the lines of stdout that belong to an attempt; a line
// outside one breaks the process.
func (w *warm) read() {
	defer close(w.msgs)
	r := NewMessageReader(w.p.stdout)
	for {
		m, err := r.Next()
		if err != nil && !errors.Is(err, sortie.ErrInvalidArgument) {
			return // EOF, or the read end was closed
		}
		if !w.take(m) {
			w.kill("it wrote a message outside an attempt")
			continue
		}
		select {
		case w.msgs <- lineMessage{msg: m, line: r.line, err: err}:
		case <-w.gone:
			return
		}
	}
}

// take reports whether a line read now belongs to the attempt in
// progress; a terminal message ends the attempt.
func (w *warm) take(m *sortie.Message) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.active {
		return false
	}
	if m != nil && m.Terminal() {
		w.active = false
	}
	return true
}

// begin starts an attempt logging to log: it sends f.
func (w *warm) begin(f *SessionFrame, log *slog.Logger) error {
	w.mu.Lock()
	w.active, w.launchID = true, f.Invoke.Invocation.LaunchID
	w.served++
	w.mu.Unlock()
	w.log.Store(log)
	return WriteSessionFrame(w.stdin, f)
}

// end ends the attempt's hold of the process, once the stderr lines it
// wrote so far are logged; later ones go to idle.
func (w *warm) end(idle *slog.Logger) {
	w.p.drainStderr()
	w.mu.Lock()
	w.active, w.launchID = false, ""
	w.mu.Unlock()
	w.log.Store(idle)
}

// kill breaks the process and kills its process group.
func (w *warm) kill(why string) {
	w.mu.Lock()
	if w.broken == "" {
		w.broken = why
	}
	w.mu.Unlock()
	select {
	case <-w.p.exited: // reaped: its pid may be another's now
	default:
		w.p.signal(true)
	}
}

// usable reports whether the process may take another attempt.
func (w *warm) usable() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case <-w.p.exited:
		return false
	default:
		return w.broken == ""
	}
}

// status waits up to a second for the process to exit (its stdout ended)
// and describes how it ended, killing it if it did not.
func (w *warm) status() sortie.Status {
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-w.p.exited:
	case <-t.C:
		w.kill("its stdout ended")
		<-w.p.exited
	}
	return procstatus.Of("worker process", w.p.cmd.ProcessState, w.p.waitErr)
}

// stop ends the process: stdin closed (a session worker exits), SIGKILL to
// its group after grace, then its pipes closed.
func (w *warm) stop(grace time.Duration) {
	_ = w.stdin.Close()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-w.p.exited:
	case <-t.C:
		w.kill("it did not exit when its stdin closed")
		<-w.p.exited
	}
	close(w.gone)
	w.p.cleanup()
	_ = w.p.stdout.Close()
}
