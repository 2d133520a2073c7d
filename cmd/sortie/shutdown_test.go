package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// SIGTERM while a slow client uploads a body: once --shutdown-grace runs
// out serve cuts the upload off, warns naming --shutdown-grace and what it
// cut before "stopped", and exits 0 (a requested stop).
func TestServeStopWhoseGraceRanOut(t *testing.T) {
	c := newCLI(t)
	cmd := c.cmd("serve", "--listen", "127.0.0.1:0", "--in-process", "--shutdown-grace", "300ms")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stderr)
	addr := ""
	for addr == "" && sc.Scan() {
		if _, rest, ok := strings.Cut(sc.Text(), "listening on http://"); ok {
			addr = strings.Fields(rest)[0]
		}
	}
	if addr == "" {
		t.Fatalf("sortie serve printed no listening address: %v", sc.Err())
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The headers of a 1 MB body; serve asks for the body (100 Continue)
	// once its handler reads it, then gets a part; the rest never comes.
	fmt.Fprintf(conn, "POST /v1/runs HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\nExpect: 100-continue\r\n\r\n", addr)
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(conn)
	if status, err := br.ReadString('\n'); err != nil || !strings.Contains(status, "100 Continue") {
		t.Fatalf("serve answered the upload's headers with %q, %v; want 100 Continue", status, err)
	}
	fmt.Fprint(conn, `{"agent":"probe","variables":{"text":"`)
	cmd.Process.Signal(syscall.SIGTERM)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	err = cmd.Wait()
	out := strings.Join(lines, "\n")
	warn := strings.Index(out, "sortie serve: warning: the shutdown grace (--shutdown-grace 300ms) ran out: 1 connection(s) with a request in flight closed")
	if stopped := strings.Index(out, "sortie serve: stopped"); err != nil || warn < 0 || stopped < warn || strings.Contains(out, "deadline exceeded") {
		t.Fatalf("sortie serve after SIGTERM with an upload in flight: %v, stderr:\n%s\nwant exit 0, the warning naming --shutdown-grace and the cut request, then stopped", err, out)
	}
	// The cut connection was closed (EOF or a reset): its read ends.
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadAll(br); errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("the upload's connection still open after serve stopped")
	}
}
