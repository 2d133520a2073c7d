package httpengine_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/server/httpengine"
)

// Following on a host that never answered (nothing listens at the URL)
// fails at once with ErrUnavailable, instead of retrying for the whole
// reconnect window as for a host that went away mid-follow.
func TestFollowOfAnUnreachedHostFailsAtOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	e, err := httpengine.New("http://"+addr, &httpengine.Options{ReconnectWindow: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var got error
	for _, err := range e.Follow(ctx, sortie.NewRunID(time.Now()), sortie.Cursor{}) {
		got = err
	}
	if !errors.Is(got, sortie.ErrUnavailable) || ctx.Err() != nil {
		t.Fatalf("Follow on %s (nothing listening) = %v (context %v), want ErrUnavailable before the reconnect window", addr, got, ctx.Err())
	}
}
