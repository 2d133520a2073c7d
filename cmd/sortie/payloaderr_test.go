package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/wire"
)

// A run whose stored result is changed (one byte flipped), then missing,
// read through `sortie serve`: GET /v1/runs/ID answers 500
// payload_integrity naming the key and the SHA-256 (not 404 for the
// missing object: the run is there), the events still read (JSON page and
// `sortie follow`'s stream, which then reports the payload's error on its
// final run read), and `sortie --host get` prints the error and exits 1.
func TestPayloadErrorsThroughServe(t *testing.T) {
	c := newCLI(t)
	final, _ := runLarge(t, c)
	ref := final.ResultRef
	url := startServeCmd(t, c, nil, "--in-process")
	remote := &cli{t: t, state: t.TempDir()}
	obj := filepath.Join(c.state, "payloads", filepath.FromSlash(ref.Key))

	flipByte(t, c.state, ref.Key)
	checkPayloadError(t, url, remote, final.ID, ref, "SHA-256 is")
	if err := os.Remove(obj); err != nil {
		t.Fatal(err)
	}
	checkPayloadError(t, url, remote, final.ID, ref, "is missing")
}

// The same run followed on the embedded engine: `sortie follow` prints
// the run's events, then fails on the final run naming the SHA-256 (it
// read the run with its payloads first, and printed nothing).
func TestPayloadErrorFollowEmbedded(t *testing.T) {
	c := newCLI(t)
	final, _ := runLarge(t, c)
	want := len(events(t, c.store(), final.ID))
	flipByte(t, c.state, final.ResultRef.Key)
	f := c.run("follow", string(final.ID), "--json")
	got, _ := jsonLines(t, f.stdout)
	if f.code != 1 || want == 0 || len(got) != want || !strings.Contains(f.stderr, final.ResultRef.SHA256) {
		t.Errorf("sortie follow: exit %d, %d events, stderr %.600q; want exit 1 after the %d events, naming the SHA-256", f.code, len(got), f.stderr, want)
	}
}

// checkPayloadError checks what the API and the CLI answer for run id,
// whose result (ref) cannot be read back for the reason named by why.
func checkPayloadError(t *testing.T, url string, remote *cli, id sortie.RunID, ref *sortie.PayloadRef, why string) {
	t.Helper()
	code, b := apiGet(t, url+"/v1/runs/"+string(id))
	d, _ := wire.DecodeError(b)
	if code != http.StatusInternalServerError || d.Code != wire.CodePayloadIntegrity || !strings.Contains(d.Message, ref.Key) ||
		!strings.Contains(d.Message, ref.SHA256) || !strings.Contains(d.Message, why) {
		t.Errorf("GET /v1/runs/ID (%s) = %d %s; want 500 payload_integrity naming %s and %s", why, code, b, ref.Key, ref.SHA256)
	}
	var page wire.EventsPage
	if code := apiCall(t, http.MethodGet, url+"/v1/runs/"+string(id)+"/events", "", nil, &page); code != http.StatusOK ||
		len(page.Events) == 0 || page.Run == nil || page.Run.ResultRef == nil || page.Run.Result != nil {
		t.Errorf("GET /v1/runs/ID/events (%s) = %d, %d events, run %+v; want 200 with the events and the run's result_ref", why, code, len(page.Events), page.Run)
	}
	f := runCmd(t, remote.cmd("--host", url, "follow", string(id), "--json"))
	events, _ := jsonLines(t, f.stdout)
	if f.code != 1 || len(events) != len(page.Events) || !strings.Contains(f.stderr, ref.SHA256) {
		t.Errorf("sortie --host follow (%s): exit %d, %d events, stderr %.600q; want exit 1 after the %d events, naming the SHA-256", why, f.code, len(events), f.stderr, len(page.Events))
	}
	g := runCmd(t, remote.cmd("--host", url, "get", string(id)))
	if g.code != 1 || !strings.Contains(g.stderr, "payload_integrity") || !strings.Contains(g.stderr, ref.Key) || !strings.Contains(g.stderr, ref.SHA256) {
		t.Errorf("sortie --host get (%s): exit %d, stderr %.600q; want exit 1 naming the key and the SHA-256", why, g.code, g.stderr)
	}
}

// apiGet returns the status and body of GET url.
func apiGet(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}
