package main

import (
	"context"
	"net"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/host"
	"github.com/sortie-run/sortie/internal/browsertest"
	"github.com/sortie-run/sortie/server/callback"
)

// TestMain is also the remote path's worker process: the test binary,
// started by the remote host with the argument "worker".
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "worker" {
		if err := runWorker(context.Background()); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	browsertest.Close()
	os.Exit(code)
}

// serveExample serves the example on a loopback port, the test binary as
// the remote worker, until the test ends.
func serveExample(t *testing.T) (*example, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ex, err := start(t.Context(), ln, t.TempDir(), []string{exe, "worker"})
	if err != nil {
		t.Fatalf("start = %v", err)
	}
	srv := &http.Server{Handler: ex, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close(); ex.Close() })
	return ex, "http://" + ln.Addr().String()
}

// The page runs textstats on each path, chosen by the user, and shows
// both streams the same way: the same events and the same result. The
// remote run really took the remote path: a separate worker process
// claimed it over the callbacks.
func TestTheSameRunEmbeddedAndRemote(t *testing.T) {
	ex, url := serveExample(t)
	tb := browsertest.NewTab(t)
	const wait = 60 * time.Second
	tb.Run(t, "open the page", wait, chromedp.Navigate(url+"/"), chromedp.WaitVisible(chromedp.CSS("#run")))
	tb.Run(t, "run embedded", wait, chromedp.Click(chromedp.CSS("#run")),
		chromedp.WaitVisible(chromedp.CSS("#lane-embedded .state-completed")))
	tb.Run(t, "run remote", wait, chromedp.Click(chromedp.CSS(`input[value="remote"]`)), chromedp.Click(chromedp.CSS("#run")),
		chromedp.WaitVisible(chromedp.CSS("#lane-remote .state-completed")))
	lane := func(mode, expr string) string {
		return browsertest.Eval[string](t, tb, `(() => { const l = document.querySelector('#lane-`+mode+`'); return `+expr+`; })()`)
	}
	const events = `[...l.querySelectorAll('li.event')].map((li) => li.dataset.cursor + ' ' + li.querySelector('.kind').textContent + ' ' + li.querySelector('.text').textContent).join('\n')`
	const result = `l.querySelector('.lane-result pre').textContent`
	if e, r := lane("embedded", events), lane("remote", events); e == "" || e != r {
		t.Errorf("event streams differ:\nembedded:\n%s\nremote:\n%s", e, r)
	}
	if e, r := lane("embedded", result), lane("remote", result); e == "" || e != r {
		t.Errorf("results differ: embedded %s, remote %s", e, r)
	}
	checkPath(t, ex.remote, sortie.RunID(lane("remote", `l.querySelector('a.run-id').textContent`)), true)
	checkPath(t, ex.embedded, sortie.RunID(lane("embedded", `l.querySelector('a.run-id').textContent`)), false)
	tb.Screenshot(t, "interactive-web")
}

// checkPath checks who ran id's attempt: a worker process of its own
// over the callbacks (remote), or this process writing the control plane.
func checkPath(t *testing.T, h *host.Host, id sortie.RunID, remote bool) {
	t.Helper()
	run, err := h.Engine().Get(t.Context(), id)
	if err != nil || len(run.Attempts) != 1 || run.Attempts[0].Ref == nil {
		t.Fatalf("Get(%s) = %+v, %v; want one attempt with its launch reference", id, run, err)
	}
	a := run.Attempts[0]
	viaCallbacks := a.Owner == callback.Owner
	ownProcess := a.Ref.ID != "" && a.Ref.ID != strconv.Itoa(os.Getpid())
	if viaCallbacks != remote || (remote && !ownProcess) {
		t.Errorf("run %s attempt owner %q, launch reference %+v; want remote %v: claimed over callbacks by a worker process of its own", id, a.Owner, a.Ref, remote)
	}
}
