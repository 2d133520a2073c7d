package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/wire"
)

func TestFollowOverSSE(t *testing.T) {
	r := newRig(t, nil)
	run := r.submit(t, `{"events": 20, "interval_ms": 5, "output": {"ok": true}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got []sortie.Event
	var final *sortie.Run
	for u, err := range r.client.Follow(ctx, run.ID, sortie.Cursor{}) {
		if err != nil {
			t.Fatalf("Follow(%s) over SSE = %v", run.ID, err)
		}
		if u.Event != nil {
			got = append(got, *u.Event)
		}
		if u.Run != nil {
			final = u.Run
		}
	}
	if final == nil || final.State != sortie.StateCompleted || string(final.Result) != `{"ok":true}` {
		t.Fatalf("Follow ended with run %+v, want completed with output {\"ok\":true}", final)
	}
	if diff := cmp.Diff(r.allEvents(t, run.ID), got); diff != "" {
		t.Fatalf("events over SSE differ from the control plane's (-stored +followed):\n%s", diff)
	}
	if len(got) != 20 {
		t.Fatalf("followed %d events, want 20", len(got))
	}
}

// sseClient reads raw SSE frames from the API.
type sseClient struct {
	resp *http.Response
	sc   *bufio.Scanner
}

func openSSE(t *testing.T, url, lastID string) *sseClient {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s (SSE, Last-Event-ID %q) = %v, %v", url, lastID, resp, err)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	return &sseClient{resp: resp, sc: sc}
}

// next returns the next frame's id, event and data; ok false at EOF.
func (c *sseClient) next() (id, event, data string, ok bool) {
	for c.sc.Scan() {
		line := c.sc.Text()
		switch {
		case line == "" && (event != "" || data != ""):
			return id, event, data, true
		case strings.HasPrefix(line, "id: "):
			id = line[4:]
		case strings.HasPrefix(line, "event: "):
			event = line[7:]
		case strings.HasPrefix(line, "data: "):
			data = line[6:]
		}
	}
	return "", "", "", false
}

func TestSSEResumeWithLastEventIDLosesNothing(t *testing.T) {
	r := newRig(t, nil)
	run := r.submit(t, `{"events": 30, "interval_ms": 10}`)
	url := r.http.URL + "/v1/runs/" + run.ID.String() + "/events"
	var ids []string
	c := openSSE(t, url, "")
	for len(ids) < 7 {
		id, event, _, ok := c.next()
		if !ok {
			t.Fatalf("stream ended after %d events", len(ids))
		}
		if event == "event" {
			ids = append(ids, id)
		}
	}
	c.resp.Body.Close() // the client drops the connection mid-run
	c = openSSE(t, url, ids[len(ids)-1])
	defer c.resp.Body.Close()
	var final sortie.Run
	for {
		id, event, data, ok := c.next()
		if !ok {
			t.Fatalf("resumed stream ended before the final run, after %d events", len(ids))
		}
		if event == "event" {
			ids = append(ids, id)
			continue
		}
		if event != "run" || json.Unmarshal([]byte(data), &final) != nil {
			t.Fatalf("frame %q %q, want event or run", event, data)
		}
		break
	}
	var want []string
	for _, ev := range r.allEvents(t, run.ID) {
		want = append(want, ev.Cursor().String())
	}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Fatalf("event IDs across the reconnect differ from the stored ones (-want +got):\n%s", diff)
	}
	if final.State != sortie.StateCompleted {
		t.Fatalf("final run state %s, want completed", final.State)
	}
}

func TestLongPollWaitsForEventsAndEndsWithTheRun(t *testing.T) {
	r := newRig(t, nil)
	run := r.submit(t, `{"events": 3, "interval_ms": 50, "sleep_ms": 100}`)
	cursor, n := "", 0
	for range 50 {
		resp, err := http.Get(r.http.URL + "/v1/runs/" + run.ID.String() + "/events?wait_ms=5000&after=" + cursor)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("long poll = %v, %v", resp, err)
		}
		var page wire.EventsPage
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("decode page: %v", err)
		}
		n += len(page.Events)
		cursor = page.NextCursor
		if page.Run != nil {
			if n != 3 || page.Run.State != sortie.StateCompleted {
				t.Fatalf("last page after %d events has run %s, want 3 events and completed", n, page.Run.State)
			}
			return
		}
		if len(page.Events) == 0 {
			t.Fatalf("a long poll of 5 s returned nothing while the run was live (cursor %q)", cursor)
		}
	}
	t.Fatal("no final run after 50 polls")
}

func TestLongPollTimesOutEmpty(t *testing.T) {
	r := newRig(t, nil)
	run := r.submit(t, `{"events": 0, "sleep_ms": 60000}`)
	defer r.engine.Cancel(context.Background(), run.ID, "test over")
	resp, err := http.Get(r.http.URL + "/v1/runs/" + run.ID.String() + "/events?wait_ms=50")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page wire.EventsPage
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil || len(page.Events) != 0 || page.Run != nil || page.NextCursor != "0.0" {
		t.Fatalf("idle long poll = %+v, %v; want an empty page with cursor 0.0", page, err)
	}
}

// The final "run" frame carries an end ID, so an EventSource that
// reconnects after it (as every standard client does when the stream
// closes) gets 204 No Content, which per the SSE specification stops it,
// instead of the run again forever.
func TestSSEEndIDEndsReconnects(t *testing.T) {
	r := newRig(t, nil)
	run := r.submit(t, `{"events": 3}`)
	r.final(t, run.ID)
	url := r.http.URL + "/v1/runs/" + run.ID.String() + "/events"
	c := openSSE(t, url, "")
	var lastEvent, endID string
	for endID == "" {
		id, event, _, ok := c.next()
		if !ok {
			t.Fatal("stream ended before the run frame")
		}
		if event == "event" {
			lastEvent = id
		} else if event == "run" {
			endID = id
		}
	}
	c.resp.Body.Close()
	if want := lastEvent + ".end"; endID != want {
		t.Fatalf("run frame id %q, want %q", endID, want)
	}
	for _, header := range []bool{true, false} {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Accept", "text/event-stream")
		if header {
			req.Header.Set("Last-Event-ID", endID)
		} else {
			req.URL.RawQuery = "after=" + endID
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Errorf("reconnect after the end (header %v) = %d, want 204", header, resp.StatusCode)
		}
	}
	// The last event's own ID still replays the run frame.
	c = openSSE(t, url, lastEvent)
	defer c.resp.Body.Close()
	if _, event, _, ok := c.next(); !ok || event != "run" {
		t.Errorf("resume after the last event = %q, %v; want the run frame", event, ok)
	}
}
