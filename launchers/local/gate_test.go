package local_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// The claim gate: the subprocess harness's worker command is this test
// binary, which connects to the gate's unix socket ($LOCAL_TEST_CLAIM_GATE),
// waits for one byte, and then becomes `sortie worker` ($LOCAL_TEST_WORKER)
// in the same process (exec: same pid, process group, stdin). An open gate
// answers at once; a held one keeps its callers waiting, launched but not
// claimed, until released.
const (
	claimGateEnv = "LOCAL_TEST_CLAIM_GATE"
	workerBinEnv = "LOCAL_TEST_WORKER"
)

// passClaimGate is the gate's client side, run by TestMain in a worker
// process: it returns only on failure.
func passClaimGate() int {
	conn, err := net.Dial("unix", os.Getenv(claimGateEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "claim gate:", err)
		return 1
	}
	if _, err := conn.Read(make([]byte, 1)); err != nil {
		fmt.Fprintln(os.Stderr, "claim gate:", err)
		return 1
	}
	bin := os.Getenv(workerBinEnv)
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, claimGateEnv+"=") || strings.HasPrefix(kv, workerBinEnv+"=")
	})
	err = syscall.Exec(bin, []string{bin, "worker"}, env)
	fmt.Fprintln(os.Stderr, "claim gate: exec worker:", err)
	return 1
}

// claimGate is the gate's server side.
type claimGate struct {
	path string
	ln   net.Listener

	mu      sync.Mutex
	held    bool
	waiting []net.Conn
}

// newClaimGate listens on a fresh unix socket until tb ends.
func newClaimGate(tb testing.TB) *claimGate {
	tb.Helper()
	dir, err := os.MkdirTemp("", "gate-") // short: a unix socket path is at most 108 bytes
	if err != nil {
		tb.Fatal(err)
	}
	g := &claimGate{path: filepath.Join(dir, "s")}
	if g.ln, err = net.Listen("unix", g.path); err != nil {
		tb.Fatalf("listen on %s: %v", g.path, err)
	}
	go g.serve()
	tb.Cleanup(func() {
		g.ln.Close()
		g.release()
		os.RemoveAll(dir)
	})
	return g
}

func (g *claimGate) serve() {
	for {
		conn, err := g.ln.Accept()
		if err != nil {
			return
		}
		g.mu.Lock()
		if g.held {
			g.waiting = append(g.waiting, conn)
		} else {
			pass(conn)
		}
		g.mu.Unlock()
	}
}

func pass(conn net.Conn) {
	conn.Write([]byte{1})
	conn.Close()
}

// hold makes workers that arrive from now on wait.
func (g *claimGate) hold() {
	g.mu.Lock()
	g.held = true
	g.mu.Unlock()
}

// release lets every waiting worker through and opens the gate.
func (g *claimGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held = false
	for _, c := range g.waiting {
		pass(c)
	}
	g.waiting = nil
}

// env returns the variables a worker command needs to pass the gate.
func (g *claimGate) env() []string {
	return []string{claimGateEnv + "=" + g.path, workerBinEnv + "=" + sortieBin}
}
