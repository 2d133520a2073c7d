package lambdarig

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// RIEModule is the emulator's main package, built with tools/lambdarie/go.mod.
const RIEModule = "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie"

// Binaries are the built emulator, bootstrap and local-kms.
type Binaries struct {
	RIE, Bootstrap, KMS string
}

// Root returns the repository root (the folder of go.mod).
func Root() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || len(bytes.TrimSpace(out)) == 0 {
		return "", fmt.Errorf("find the module root with `go env GOMOD`: %v (is the Go toolchain on PATH?)", err)
	}
	return filepath.Dir(string(bytes.TrimSpace(out))), nil
}

// Build builds the pinned emulator, the bootstrap (`go build -tags
// lambda.norpc ./cmd/sortie-lambda`) and local-kms into dir.
func Build(dir string) (*Binaries, error) {
	root, err := Root()
	if err != nil {
		return nil, err
	}
	b := &Binaries{RIE: filepath.Join(dir, "aws-lambda-rie"), Bootstrap: filepath.Join(dir, "bootstrap"), KMS: filepath.Join(dir, "local-kms")}
	builds := [][]string{
		{"build", "-modfile=" + filepath.Join(root, "tools", "lambdarie", "go.mod"), "-o", b.RIE, RIEModule},
		{"build", "-tags", "lambda.norpc", "-o", b.Bootstrap, "./cmd/sortie-lambda"},
		{"build", "-modfile=" + filepath.Join(root, "tools", "localkms", "go.mod"), "-o", b.KMS, "github.com/nsmithuk/local-kms"},
	}
	for _, args := range builds {
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go %v: %v\n%s", args, err, out)
		}
	}
	return b, nil
}

// RIE is a running emulator serving the function "function".
type RIE struct {
	// Endpoint is the emulator's base URL, for the Lambda client's BaseEndpoint.
	Endpoint string
	cmd      *exec.Cmd
	out      *Tail
	exited   chan struct{}
	once     sync.Once
}

// StartRIE runs the emulator with bootstrap as the function, a timeout of
// timeoutS seconds and exactly env (plus the emulator's own variables),
// and waits until it accepts connections.
func StartRIE(rie, bootstrap string, timeoutS int, env []string) (*RIE, error) {
	api, err := freePort()
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(rie, "--runtime-interface-emulator-address", addr,
		"--runtime-api-address", "127.0.0.1:"+strconv.Itoa(api), bootstrap)
	cmd.Env = append([]string{"AWS_LAMBDA_FUNCTION_TIMEOUT=" + strconv.Itoa(timeoutS), "AWS_LAMBDA_FUNCTION_NAME=function",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=512", "LOG_LEVEL=warn"}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := &Tail{Max: 64 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", rie, err)
	}
	r := &RIE{Endpoint: "http://" + addr, cmd: cmd, out: out, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(r.exited) }()
	if err := waitListening(addr, r.exited); err != nil {
		r.Stop()
		return nil, fmt.Errorf("the emulator at %s: %w; output:\n%s", addr, err, out)
	}
	return r, nil
}

// Output returns the last 64 KiB the emulator and the function wrote.
func (r *RIE) Output() string { return r.out.String() }

// Stop ends the emulator and the function's process, and waits.
func (r *RIE) Stop() {
	r.once.Do(func() {
		_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		<-r.exited
	})
}

func waitListening(addr string, exited <-chan struct{}) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not listening after 30 s: %w", err)
		}
		select {
		case <-exited:
			return errors.New("exited before it listened")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Tail keeps the last Max bytes written to it.
type Tail struct {
	mu  sync.Mutex
	buf bytes.Buffer
	Max int
}

func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if over := t.buf.Len() - t.Max; over > 0 {
		t.buf.Next(over)
	}
	return len(p), nil
}

func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}
