package httpengine

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/wire"
)

// maxSSELine bounds one SSE line: the final run with a result of
// sortie.MaxResultBytes and its attempts fits.
const maxSSELine = 4 << 20

// sseEvent is one dispatched Server-Sent Event (the fields this API
// uses: id, event, data; per the WHATWG HTML "Server-sent events" section).
type sseEvent struct {
	id, event, data string
}

// readSSE calls fn for each event of r until EOF, an error or fn returns
// false. Comment lines (":") and retry fields are ignored.
func readSSE(r io.Reader, fn func(sseEvent) bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxSSELine)
	var ev sseEvent
	var data []string
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if len(data) > 0 || ev.event != "" {
				ev.data = strings.Join(data, "\n")
				if !fn(ev) {
					return nil
				}
			}
			ev, data = sseEvent{}, nil
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			ev.id = value
		case "event":
			ev.event = value
		case "data":
			data = append(data, value)
		}
	}
	return sc.Err()
}

// logf logs a Follow warning about run id on Options.Logger; a non-zero
// since adds how long the stream was down.
func (e *Engine) logf(msg string, id sortie.RunID, since time.Time, args ...any) {
	if e.opts.Logger == nil {
		return
	}
	args = append(args, "run", id)
	if !since.IsZero() {
		args = append(args, "after", time.Since(since).Round(time.Millisecond))
	}
	e.opts.Logger.Warn(msg, args...)
}

// errNoAnswer marks a request that got no HTTP answer at all.
var errNoAnswer = errors.New("no answer from the host")

// Follow streams the run's events after the cursor over SSE, then the
// final run. A dropped connection is resumed after the last event (?after=); after
// Options.ReconnectWindow without progress it yields the error. A host
// that never answered (the first request got no HTTP answer: a wrong URL,
// a host not running) is an error at once, wrapping
// sortie.ErrUnavailable.
func (e *Engine) Follow(ctx context.Context, id sortie.RunID, after sortie.Cursor) iter.Seq2[sortie.Update, error] {
	return func(yield func(sortie.Update, error) bool) {
		if err := id.Validate(); err != nil {
			yield(sortie.Update{}, err)
			return
		}
		cur, fails, since, reached := after, 0, time.Now(), false
		var lostAt time.Time // when the stream dropped, until an update comes again
		emit := func(u sortie.Update, err error) bool {
			if err == nil && !lostAt.IsZero() {
				e.logf("follow: reconnected to the host; no event lost", id, lostAt)
				lostAt = time.Time{}
			}
			return yield(u, err)
		}
		for {
			progressed, done, err := e.followOnce(ctx, id, &cur, emit)
			if done {
				return
			}
			if !reached && errors.Is(err, errNoAnswer) {
				// Never reached: a wrong URL or a host not running, not a
				// host restarting; say so at once.
				yield(sortie.Update{}, err)
				return
			}
			reached = true
			if progressed {
				fails, since = 0, time.Now()
			}
			fails++
			backoff := time.Duration(min(100<<fails, 2000)) * time.Millisecond
			if time.Since(since)+backoff > e.opts.ReconnectWindow || ctx.Err() != nil || (err != nil && !retryable(err)) {
				if err == nil {
					err = fmt.Errorf("httpengine: follow %s: the stream ended %d times without the final run: %w", id, fails, sortie.ErrUnavailable)
				}
				yield(sortie.Update{}, err)
				return
			}
			if lostAt.IsZero() {
				lostAt = time.Now()
				var args []any
				if err != nil { // nil: the stream ended without the final run
					args = []any{"err", err}
				}
				e.logf("follow: lost the connection to the host; reconnecting", id, time.Time{}, args...)
			}
			if wait(ctx, backoff) != nil {
				yield(sortie.Update{}, ctx.Err())
				return
			}
		}
	}
}

// followOnce runs one SSE connection. done means the sequence is over
// (final run yielded, consumer stopped, or a non-retryable error yielded).
func (e *Engine) followOnce(ctx context.Context, id sortie.RunID, cur *sortie.Cursor, yield func(sortie.Update, error) bool) (progressed, done bool, err error) {
	var q url.Values
	if *cur != (sortie.Cursor{}) {
		// ?after=, not Last-Event-ID: an error about the cursor then names
		// "after", the caller's argument.
		q = url.Values{"after": {cur.String()}}
	}
	req, err := e.request(ctx, http.MethodGet, runPath(id, "/events"), q, nil)
	if err != nil {
		yield(sortie.Update{}, err)
		return false, true, nil
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := e.hc.Do(req)
	if err != nil {
		return false, false, fmt.Errorf("httpengine: follow %s: %w: %w: %w", id, sortie.ErrUnavailable, errNoAnswer, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		err := decodeError(resp)
		if retryable(err) {
			return false, false, err
		}
		yield(sortie.Update{}, err)
		return false, true, nil
	}
	rerr := readSSE(resp.Body, func(ev sseEvent) bool {
		var u sortie.Update
		u, done, err = decodeUpdate(ev)
		if err != nil {
			done = true
			yield(sortie.Update{}, err)
			return false
		}
		if u.Event != nil {
			*cur, progressed = u.Event.Cursor(), true
		}
		if u.Run != nil && u.Run.HasPayloadRefs() {
			// The stream carries payloads kept by reference as references.
			if u.Run, err = e.Get(ctx, id); err != nil {
				done = true
				yield(sortie.Update{}, err)
				return false
			}
		}
		if !yield(u, nil) {
			done = true
		}
		return !done
	})
	if !done && rerr != nil {
		err = fmt.Errorf("httpengine: follow %s: %w: %w", id, sortie.ErrUnavailable, rerr)
	}
	return progressed, done, err
}

// decodeUpdate decodes one SSE event of the API; done is set by the final
// run.
func decodeUpdate(ev sseEvent) (sortie.Update, bool, error) {
	switch ev.event {
	case "event":
		var e sortie.Event
		if err := json.Unmarshal([]byte(ev.data), &e); err != nil {
			return sortie.Update{}, true, fmt.Errorf("httpengine: decode event %s: %w", ev.id, err)
		}
		return sortie.Update{Event: &e}, false, nil
	case "run":
		var r sortie.Run
		if err := json.Unmarshal([]byte(ev.data), &r); err != nil {
			return sortie.Update{}, true, fmt.Errorf("httpengine: decode final run: %w", err)
		}
		return sortie.Update{Run: &r}, true, nil
	case "error":
		d, ok := wire.DecodeError([]byte(ev.data))
		if !ok {
			return sortie.Update{}, true, errors.New("httpengine: the host ended the stream with an undecodable error")
		}
		return sortie.Update{}, true, detailError(0, d)
	}
	return sortie.Update{}, false, nil
}
