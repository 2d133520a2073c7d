package functions

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/strictjson"
)

// SessionVersion names the multi-invocation worker protocol, version 1: a
// worker process that stays up and executes one attempt after another,
// instead of one process per attempt. The host writes [SessionFrame] lines
// on the worker's stdin:
//
//	{"invoke": {"invocation": {...sortie.invocation/v1...}, "config": {"NAME": "value"}}}
//	{"cancel": {"launch_id": "..."}}
//	{"step": {"launch_id": "...", "name": "...", "error": {...}}}
//	{"authorize": {"launch_id": "...", "id": "...", "allowed": false, "reason": "..."}}
//
// The worker executes an invoked attempt and writes its worker messages
// ([sortie.Message] lines: events, then exactly one result, error or
// interrupt) on stdout, as a one-shot worker does; the terminal message
// ends the attempt, and the worker then waits for the next invoke. A step
// message ([sortie.StepMessage]) is answered by a step frame once the host
// recorded the step (no error) or could not ([SessionStep]); a worker
// waits for it before it goes on, so a step is durable before the work
// after it starts. An authorize message ([sortie.AuthorizeRequest]: may
// the run call this tool, open this connection?) is answered by an
// authorize frame with its ID once the host's hook decided; the host
// reports the decision as an event for an exec command, a Go session
// worker reports it itself. The invocation carries the run's recorded steps with
// their results in the clear (a secret step's too). One
// attempt runs at a time: the host sends the next invoke only after the
// terminal message. A cancel names the attempt in progress (a cancel of
// another launch ID is ignored): the worker stops its handler and still
// ends the attempt with a terminal message. "config" is the attempt's
// inline configuration, opened by the host and limited to its allowlist;
// its values are secrets, for this attempt only (the process environment
// is the same for every attempt). The invocation never carries sealed
// configuration. When stdin ends, the worker stops the attempt in
// progress, ends it and exits. Logs go to stderr; the host files the
// lines written during an attempt under that attempt.
//
// The host stops a worker process that writes an invalid line or a message
// outside an attempt, and one that has not ended a cancelled attempt after
// its grace period (SIGKILL to its process group); a process that exits
// during an attempt ended it without a word. Either way the next attempt
// gets a new process. An exec runtime opts in with "protocol" in the
// runtimes file ([ExecSpec.Protocol]); `sortie worker --session` is the Go
// worker's side ([Worker.ServeSession]).
const SessionVersion = "sortie.session/v1"

// maxFrameBytes bounds one frame: an invocation, its configuration and
// the run's steps in the clear (escapes included).
const maxFrameBytes = sortie.MaxInvocationBytes + sortie.MaxConfigBytes + 2*sortie.MaxStepsBytes + 64<<10

// SessionFrame is one line the host writes to a session worker: exactly
// one field is set.
type SessionFrame struct {
	Invoke *SessionInvoke `json:"invoke,omitempty"`
	Cancel *SessionCancel `json:"cancel,omitempty"`
	Step   *SessionStep   `json:"step,omitempty"`
	// Authorize answers an authorize message (format
	// sortie.AuthorizeVersion).
	Authorize *SessionAuthorize `json:"authorize,omitempty"`
}

// SessionAuthorize answers the authorize message ID of the attempt with
// LaunchID: Allowed, or refused for Reason (the host's words, never the
// arguments).
type SessionAuthorize struct {
	LaunchID string `json:"launch_id"`
	ID       string `json:"id"`
	Allowed  bool   `json:"allowed"`
	Reason   string `json:"reason,omitempty"`
}

// SessionStep answers a step message of the attempt with LaunchID: the
// step Name was recorded (Error nil), or not: Error.Type is "conflict"
// (other content under the name, or the claim lost), "terminal",
// "invalid_argument" (the step was refused: a name used twice, a result
// too large, a step recorded earlier that the worker ran again instead of
// replaying it) or "unavailable".
type SessionStep struct {
	LaunchID string               `json:"launch_id"`
	Name     string               `json:"name"`
	Error    *sortie.ErrorMessage `json:"error,omitempty"`
}

// SessionInvoke starts an attempt.
type SessionInvoke struct {
	Invocation *sortie.Invocation `json:"invocation"`
	// Config is the attempt's opened inline configuration. Optional.
	Config map[string]string `json:"config,omitempty"`
}

// SessionCancel stops the attempt in progress with LaunchID.
type SessionCancel struct {
	LaunchID string `json:"launch_id"`
}

// Validate checks that exactly one field is set and that it is valid. It
// returns a [*sortie.ValidationError] naming the field.
func (f *SessionFrame) Validate() error {
	n := 0
	for _, set := range []bool{f.Invoke != nil, f.Cancel != nil, f.Step != nil, f.Authorize != nil} {
		if set {
			n++
		}
	}
	switch {
	case n != 1:
		return sortie.Invalidf("frame", "set exactly one of invoke, cancel, step and authorize")
	case f.Authorize != nil:
		if f.Authorize.LaunchID == "" || f.Authorize.ID == "" {
			return sortie.Invalidf("authorize", "launch_id and id are required")
		}
		return nil
	case f.Step != nil:
		if f.Step.LaunchID == "" || f.Step.Name == "" {
			return sortie.Invalidf("step", "launch_id and name are required")
		}
		return nil
	case f.Cancel != nil:
		if f.Cancel.LaunchID == "" {
			return sortie.Invalidf("cancel.launch_id", "is required")
		}
		return nil
	case f.Invoke.Invocation == nil:
		return sortie.Invalidf("invoke.invocation", "is required")
	case len(f.Invoke.Invocation.SealedConfig) > 0:
		return sortie.Invalidf("invoke.invocation.sealed_config", "a session worker gets the opened configuration in invoke.config, never sealed")
	}
	return f.Invoke.Invocation.Validate()
}

// WriteSessionFrame validates f and writes it to w as one line, in one
// Write call.
func WriteSessionFrame(w io.Writer, f *SessionFrame) error {
	if err := f.Validate(); err != nil {
		return err
	}
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("encode session frame: %w", err)
	}
	if len(b) > maxFrameBytes {
		return sortie.Invalidf("frame", "%d bytes encoded, limit %d", len(b), maxFrameBytes)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// SessionReader reads [SessionFrame] lines. Blank lines are skipped.
type SessionReader struct {
	br   *bufio.Reader
	line int
}

// NewSessionReader returns a reader of the frames in r.
func NewSessionReader(r io.Reader) *SessionReader {
	return &SessionReader{br: bufio.NewReaderSize(r, 64<<10)}
}

// Next returns the next frame, or io.EOF after the last one. A line that
// is too long, not strict JSON or not a valid frame is a
// [*sortie.ValidationError]; the protocol allows no recovery from it.
func (r *SessionReader) Next() (*SessionFrame, error) {
	for {
		line, err := readBounded(r.br, maxFrameBytes)
		if err != nil {
			return nil, err
		}
		r.line++
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		return decodeFrame(line, r.line)
	}
}

// readBounded returns the next line without its end of line; a line over
// limit is a [*sortie.ValidationError].
func readBounded(br *bufio.Reader, limit int) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > limit+2 {
			return nil, sortie.Invalidf("frame", "a line over %d bytes", limit)
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(buf) > 0:
		case err != nil:
			return nil, err
		}
		return bytes.TrimSuffix(bytes.TrimSuffix(buf, []byte("\n")), []byte("\r")), nil
	}
}

func decodeFrame(line []byte, n int) (*SessionFrame, error) {
	var f SessionFrame
	if err := strictjson.Unmarshal(line, &f); err != nil {
		return nil, atLine(n, sortie.Invalidf("frame", "%v", err))
	}
	if err := f.Validate(); err != nil {
		return nil, atLine(n, err)
	}
	return &f, nil
}
