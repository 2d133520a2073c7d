package localkms

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kms"
)

// The seeded account, region, keys and aliases.
const (
	Region  = "us-east-1"
	Account = "111122223333"
	KeyA    = "0b0e5a2c-5a6f-4c8e-9d31-6a1f2b3c4d5e"
	KeyB    = "7c9d1e2f-3a4b-4c5d-8e6f-7a8b9c0d1e2f"
	AliasA  = "alias/sortie-a"
	AliasB  = "alias/sortie-b"
)

// ARN returns the ARN of a seeded key.
func ARN(keyID string) string {
	return "arn:aws:kms:" + Region + ":" + Account + ":key/" + keyID
}

const seed = `Keys:
  Symmetric:
    Aes:
      - Metadata:
          KeyId: ` + KeyA + `
        BackingKeys:
          - 5cdaead27fe7da2de47945d73cd6d79e36494e73802f3cd3869f1d2cb0b5d7a9
      - Metadata:
          KeyId: ` + KeyB + `
        BackingKeys:
          - 614e645267556b58703273357638792f423f4528472b4b6250655368566d5971
Aliases:
  - AliasName: ` + AliasA + `
    TargetKeyId: ` + KeyA + `
  - AliasName: ` + AliasB + `
    TargetKeyId: ` + KeyB + `
`

// Server is a running local-kms.
type Server struct {
	// Endpoint is its base URL, http://127.0.0.1:PORT.
	Endpoint string
	cmd      *exec.Cmd
	exited   chan struct{}
	out      *tail
}

var shared struct {
	once sync.Once
	dir  string
	srv  *Server
	err  error
}

// Main runs the tests of m and then stops the shared server, if one was
// started; TestMain passes its result to os.Exit.
func Main(m *testing.M) int {
	code := m.Run()
	if shared.srv != nil {
		shared.srv.Stop()
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	return code
}

// Shared returns the package's server, building and starting it on first
// use. It fails t when that is impossible.
func Shared(t testing.TB) *Server {
	t.Helper()
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "sortie-localkms-")
		if shared.err != nil {
			return
		}
		var bin string
		if bin, shared.err = Build(shared.dir); shared.err == nil {
			shared.srv, shared.err = Start(bin, filepath.Join(shared.dir, "data"))
		}
	})
	if shared.err != nil {
		t.Fatalf("local-kms: %v", shared.err)
	}
	return shared.srv
}

// Build builds the pinned local-kms into dir and returns its path.
func Build(dir string) (string, error) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || len(bytes.TrimSpace(gomod)) == 0 {
		return "", fmt.Errorf("find the module root with `go env GOMOD`: %v (is the Go toolchain on PATH?)", err)
	}
	root := filepath.Dir(string(bytes.TrimSpace(gomod)))
	modfile := filepath.Join(root, "tools", "localkms", "go.mod")
	bin := filepath.Join(dir, "local-kms")
	cmd := exec.Command("go", "build", "-modfile="+modfile, "-o", bin, "github.com/nsmithuk/local-kms")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the pinned local-kms with `go build -modfile=%s github.com/nsmithuk/local-kms`: %v\n%s"+
			"(the module must be reachable through the Go module proxy or in the module cache)", modfile, err, out)
	}
	return bin, nil
}

var startedPattern = regexp.MustCompile(`Local KMS started on [^\s]*:(\d+)`)

// Start runs bin with a new data directory and the seed, on a port the
// system picks, and waits (at most 30 s) until it serves.
func Start(bin, dataDir string) (*Server, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, err
	}
	seedPath := filepath.Join(filepath.Dir(dataDir), "seed.yaml")
	if err := os.WriteFile(seedPath, []byte(seed), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin)
	cmd.Env = []string{"PORT=0", "KMS_REGION=" + Region, "KMS_ACCOUNT_ID=" + Account,
		"KMS_DATA_PATH=" + dataDir, "KMS_SEED_PATH=" + seedPath}
	r, w := io.Pipe()
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &Server{cmd: cmd, exited: make(chan struct{}), out: &tail{}}
	go func() { _ = cmd.Wait(); w.Close(); close(s.exited) }()
	port := make(chan string, 1)
	go s.scan(r, port)
	select {
	case p := <-port:
		s.Endpoint = "http://127.0.0.1:" + p
		return s, nil
	case <-s.exited:
		return nil, fmt.Errorf("local-kms exited before it served:\n%s", s.out)
	case <-time.After(30 * time.Second):
		s.Stop()
		return nil, fmt.Errorf("local-kms did not log its port within 30 s:\n%s", s.out)
	}
}

// scan reads the server's output, sends the port once it is logged and
// keeps the last lines for error messages.
func (s *Server) scan(r io.Reader, port chan<- string) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		s.out.add(sc.Text())
		if m := startedPattern.FindStringSubmatch(sc.Text()); m != nil {
			select {
			case port <- m[1]:
			default:
			}
		}
	}
	_, _ = io.Copy(io.Discard, r)
}

// Stop ends the server and waits for it.
func (s *Server) Stop() {
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// Client returns a KMS client of the server with static test credentials
// and no retries.
func (s *Server) Client() *kms.Client {
	return kms.New(kms.Options{
		Region:           Region,
		BaseEndpoint:     aws.String(s.Endpoint),
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDLOCALKMS", "local-kms-test-secret", ""),
		RetryMaxAttempts: 1,
	})
}

// Ping reports whether the server answers a ListKeys call.
func (s *Server) Ping(ctx context.Context) error {
	_, err := s.Client().ListKeys(ctx, &kms.ListKeysInput{})
	return err
}

// tail keeps the last lines of output.
type tail struct {
	mu    sync.Mutex
	lines []string
}

func (t *tail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, line)
	if len(t.lines) > 40 {
		t.lines = t.lines[len(t.lines)-40:]
	}
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, "\n")
}
