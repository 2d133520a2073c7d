package ui

import (
	"net/http/httptest"
	"testing"
	"time"
)

func TestSessionsExpireAndEvictTheOldest(t *testing.T) {
	s := newSessions(time.Hour, 2)
	now := time.Unix(1_000_000, 0)
	first, _ := s.create("t1", now)
	second, _ := s.create("t2", now.Add(time.Second))
	third, _ := s.create("t3", now.Add(2*time.Second))
	with := func(id string) *session {
		r := httptest.NewRequest("GET", "/", nil)
		r.AddCookie(sessionCookie(r, id, 60))
		return s.get(r, now.Add(3*time.Second))
	}
	if with(first) != nil {
		t.Errorf("the oldest of three sessions with MaxSessions 2 is still live")
	}
	if got := with(second); got == nil || got.token != "t2" {
		t.Errorf("second session = %+v, want token t2", got)
	}
	if got := with(third); got == nil || got.token != "t3" {
		t.Errorf("third session = %+v, want token t3", got)
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.AddCookie(sessionCookie(r, third, 60))
	if got := s.get(r, now.Add(2*time.Second+time.Hour)); got != nil {
		t.Errorf("session live an hour after login with a TTL of 1 h: %+v", got)
	}
}
