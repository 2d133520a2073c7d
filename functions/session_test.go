package functions

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
)

func TestSessionFrameRoundTrip(t *testing.T) {
	inv := testInvocation("go:h", `{"n":1}`)
	frames := []*SessionFrame{
		{Invoke: &SessionInvoke{Invocation: inv, Config: map[string]string{"TOKEN": "s3cret"}}},
		{Cancel: &SessionCancel{LaunchID: inv.LaunchID}},
	}
	var buf bytes.Buffer
	for _, f := range frames {
		if err := WriteSessionFrame(&buf, f); err != nil {
			t.Fatalf("WriteSessionFrame(%+v) = %v", f, err)
		}
	}
	r := NewSessionReader(&buf)
	for i, want := range frames {
		got, err := r.Next()
		if err != nil || cmp.Diff(want, got) != "" {
			t.Errorf("frame %d read back = %v, diff (-written +read):\n%s", i+1, err, cmp.Diff(want, got))
		}
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("Next after the last frame = %v, want io.EOF", err)
	}
}

func TestSessionReaderRefusals(t *testing.T) {
	inv := `{"version":"sortie.invocation/v1","run_id":"` + string(sortie.NewRunID(time.Now())) + `","attempt":1,"launch_id":"` + sortie.NewLaunchID() +
		`","agent":{"name":"a","runtime":"go:h"},"deadline_ms":1,"heartbeat_ms":10,"lease_ms":30,"report":{"mode":"control-plane"}}`
	for name, tc := range map[string]struct{ line, field string }{
		"neither":        {`{}`, "frame"},
		"both":           {`{"invoke":{"invocation":` + inv + `},"cancel":{"launch_id":"x"}}`, "frame"},
		"no launch ID":   {`{"cancel":{}}`, "cancel.launch_id"},
		"no invocation":  {`{"invoke":{}}`, "invoke.invocation"},
		"sealed config":  {`{"invoke":{"invocation":` + strings.Replace(inv, `"attempt":1`, `"attempt":1,"sealed_config":{"v":1}`, 1) + `}}`, "invoke.invocation.sealed_config"},
		"unknown field":  {`{"invoke":{"invocation":` + inv + `,"extra":1}}`, "frame"},
		"not JSON":       {`invoke please`, "frame"},
		"trailing value": {`{"cancel":{"launch_id":"x"}} {}`, "frame"},
		"too long":       {`{"cancel":{"launch_id":"` + strings.Repeat("x", maxFrameBytes) + `"}}`, "frame"},
	} {
		_, err := NewSessionReader(strings.NewReader(tc.line + "\n")).Next()
		var ve *sortie.ValidationError
		if !errors.As(err, &ve) || ve.Field != tc.field {
			t.Errorf("%s: Next = %v, want a ValidationError for %s", name, err, tc.field)
		}
	}
}

func FuzzSessionReader(f *testing.F) {
	f.Add([]byte(`{"cancel":{"launch_id":"01J"}}` + "\n"))
	f.Add([]byte(`{"invoke":{"invocation":{"version":"sortie.invocation/v1"},"config":{"A":"b"}}}`))
	f.Add([]byte("\n\n{}\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewSessionReader(bytes.NewReader(b))
		for range 10 {
			fr, err := r.Next()
			if err != nil {
				return
			}
			if err := fr.Validate(); err != nil {
				t.Fatalf("Next returned a frame that does not validate: %v", err)
			}
		}
	})
}

// session drives ServeSession over pipes.
type session struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *MessageReader
	done chan error
}

func newSession(t *testing.T, h Handler) *session {
	w, _ := newWorker(register(h))
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &session{t: t, in: inW, out: NewMessageReader(outR), done: make(chan error, 1)}
	go func() {
		s.done <- w.ServeSession(context.Background(), inR, outW)
		outW.Close()
	}()
	return s
}

func (s *session) send(f *SessionFrame) {
	s.t.Helper()
	if err := WriteSessionFrame(s.in, f); err != nil {
		s.t.Fatalf("send %+v: %v", f, err)
	}
}

// next reads the next message of the session.
func (s *session) next() *sortie.Message {
	s.t.Helper()
	m, err := s.out.Next()
	if err != nil {
		s.t.Fatalf("read a message: %v", err)
	}
	return m
}

func TestServeSessionRunsAttemptsInTurn(t *testing.T) {
	s := newSession(t, func(_ context.Context, c *Call) (any, error) {
		if err := c.Emit("hello", string(c.RunID()), nil); err != nil {
			return nil, err
		}
		return map[string]any{"attempt": c.Attempt(), "config": c.Config()}, nil
	})
	for i := 1; i <= 2; i++ {
		inv := testInvocation("go:h", "")
		inv.Attempt = i
		s.send(&SessionFrame{Invoke: &SessionInvoke{Invocation: inv, Config: map[string]string{"K": "v"}}})
		if e := s.next().Event; e == nil || e.Seq != 1 || e.Text != string(inv.RunID) {
			t.Fatalf("attempt %d: first message event %+v, want seq 1 naming the run", i, e)
		}
		if m := s.next(); m.Result == nil || string(m.Result.Output) != fmt.Sprintf(`{"attempt":%d,"config":{"K":"v"}}`, i) {
			t.Fatalf("attempt %d: terminal message %+v, want its result with the frame's config", i, m)
		}
	}
	s.in.Close()
	if err := <-s.done; err != nil {
		t.Errorf("ServeSession after stdin ended = %v, want nil", err)
	}
}

func TestServeSessionCancel(t *testing.T) {
	started := make(chan struct{})
	s := newSession(t, func(ctx context.Context, _ *Call) (any, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	inv := testInvocation("go:h", "")
	inv.HeartbeatMs = time.Hour.Milliseconds()
	inv.LeaseMs = 3 * inv.HeartbeatMs
	s.send(&SessionFrame{Invoke: &SessionInvoke{Invocation: inv}})
	<-started
	s.send(&SessionFrame{Cancel: &SessionCancel{LaunchID: sortie.NewLaunchID()}}) // another launch: ignored
	s.send(&SessionFrame{Cancel: &SessionCancel{LaunchID: inv.LaunchID}})
	if m := s.next(); m.Error == nil || m.Error.Type != sortie.ErrorTypeCancelled {
		t.Fatalf("terminal message after the cancel = %+v, want error type cancelled", m)
	}
	s.in.Close()
	if err := <-s.done; err != nil {
		t.Errorf("ServeSession = %v, want nil", err)
	}
}

func TestServeSessionStopsOnABadFrame(t *testing.T) {
	s := newSession(t, func(context.Context, *Call) (any, error) { return nil, nil })
	io.WriteString(s.in, `{"invoke":{}}`+"\n")
	var ve *sortie.ValidationError
	if err := <-s.done; !errors.As(err, &ve) {
		t.Errorf("ServeSession after a bad frame = %v, want a ValidationError", err)
	}
}
