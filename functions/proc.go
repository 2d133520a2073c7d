package functions

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync/atomic"
	"time"
)

// defaultGraceMs is how long an exec worker has between SIGTERM and SIGKILL.
const defaultGraceMs = 5000

// proc is a running exec worker with its own pipes: the child gets the
// files themselves, so Wait returns when it exits, whoever else holds them.
type proc struct {
	cmd     *exec.Cmd
	stdout  *os.File // read end
	stderr  *os.File // read end
	exited  chan struct{}
	waitErr error // set before exited is closed
	logged  chan struct{}
	idle    atomic.Bool // the stderr reader waits for more, having logged all it read
}

// startProc starts spec with exactly spec.Env, writes input to its stdin
// and closes it, and logs its stderr lines to log.
func startProc(spec ExecSpec, input []byte, log *slog.Logger) (*proc, error) {
	p, stdin, err := spawnProc(spec, func() *slog.Logger { return log })
	if err != nil {
		return nil, err
	}
	go func() {
		// A worker that exits without reading gets EPIPE here, not us.
		_, _ = stdin.Write(input)
		_ = stdin.Close()
	}()
	return p, nil
}

// spawnProc starts spec with exactly spec.Env in a process group of its
// own and returns it with the write end of its stdin; its stderr lines go
// to the logger log returns at each line.
func spawnProc(spec ExecSpec, log func() *slog.Logger) (*proc, *os.File, error) {
	cmd := exec.Command(spec.Command[0], spec.Command[1:]...)
	cmd.Dir = spec.Dir
	cmd.Env = append([]string{}, spec.Env...) // never nil: nil would inherit ours
	setProcessGroup(cmd)
	var ends [6]*os.File // stdin r/w, stdout r/w, stderr r/w
	for i := 0; i < 6; i += 2 {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll(ends[:i])
			return nil, nil, fmt.Errorf("pipe: %w", err)
		}
		ends[i], ends[i+1] = r, w
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = ends[0], ends[3], ends[5]
	err := cmd.Start()
	closeAll([]*os.File{ends[0], ends[3], ends[5]}) // the child has its copies
	if err != nil {
		closeAll([]*os.File{ends[1], ends[2], ends[4]})
		return nil, nil, err
	}
	p := &proc{cmd: cmd, stdout: ends[2], stderr: ends[4], exited: make(chan struct{}), logged: make(chan struct{})}
	go func() {
		defer close(p.logged)
		logLines(p.stderr, log, &p.idle)
	}()
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, ends[1], nil
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		if f != nil {
			_ = f.Close()
		}
	}
}

// logLines logs each line of r (clipped to 16 KiB) at info level, to the
// logger log returns when the line is read. idle is set while it waits
// for more with everything it read logged.
func logLines(r io.Reader, log func() *slog.Logger, idle *atomic.Bool) {
	br := bufio.NewReaderSize(r, 16<<10)
	for {
		idle.Store(br.Buffered() == 0)
		line, err := br.ReadSlice('\n')
		idle.Store(false)
		if len(line) > 0 {
			log().Info(clip(string(trimEOL(line))), "stream", "stderr")
		}
		for errors.Is(err, bufio.ErrBufferFull) { // skip the rest of a long line
			_, err = br.ReadSlice('\n')
		}
		if err != nil {
			return
		}
	}
}

func trimEOL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// drainStderr waits (up to 100 ms) until the stderr lines the process
// wrote so far are logged: its stderr pipe is empty and the reader idle.
func (p *proc) drainStderr() {
	for range 100 {
		if p.idle.Load() && pipeEmpty(p.stderr) {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// signal sends SIGTERM, or SIGKILL when kill is set, to the worker's
// process group.
func (p *proc) signal(kill bool) { signalGroup(p.cmd.Process, kill) }

// cleanup runs once the worker exited: it kills what is left of its
// process group and waits (at most a second) for its stderr to drain. The
// caller reads stdout to its end and closes it.
func (p *proc) cleanup() {
	p.signal(true)
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-p.logged:
	case <-t.C:
		_ = p.stderr.Close()
		<-p.logged
	}
	_ = p.stderr.Close()
}

// status describes how the worker exited.
func (p *proc) status() string {
	if p.cmd.ProcessState == nil {
		return fmt.Sprintf("unknown status (%v)", p.waitErr)
	}
	return p.cmd.ProcessState.String()
}
