package rig

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"time"
)

// The local-kms account, region and the seeded key.
const (
	KMSRegion  = "us-east-1"
	KMSAccount = "111122223333"
	KMSKeyID   = "0b0e5a2c-5a6f-4c8e-9d31-6a1f2b3c4d5e"
	// KMSKeyARN is the seeded key's ARN.
	KMSKeyARN = "arn:aws:kms:" + KMSRegion + ":" + KMSAccount + ":key/" + KMSKeyID
)

const kmsSeed = `Keys:
  Symmetric:
    Aes:
      - Metadata:
          KeyId: ` + KMSKeyID + `
        BackingKeys:
          - 5cdaead27fe7da2de47945d73cd6d79e36494e73802f3cd3869f1d2cb0b5d7a9
`

var kmsStarted = regexp.MustCompile(`Local KMS started on [^\s]*:(\d+)`)

// KMS is a running local-kms.
type KMS struct {
	// Endpoint is its base URL, http://127.0.0.1:PORT.
	Endpoint string
	cmd      *exec.Cmd
	out      *Tail
	exited   chan struct{}
	once     sync.Once
}

// StartKMS runs bin with a fresh data folder under dir and the seeded key,
// on a port the system picks, and waits (at most 30 s) until it serves.
func StartKMS(bin, dir string) (*KMS, error) {
	data := filepath.Join(dir, "kms-data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		return nil, err
	}
	seed := filepath.Join(dir, "kms-seed.yaml")
	if err := os.WriteFile(seed, []byte(kmsSeed), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin)
	cmd.Env = []string{"PORT=0", "KMS_REGION=" + KMSRegion, "KMS_ACCOUNT_ID=" + KMSAccount, "KMS_DATA_PATH=" + data, "KMS_SEED_PATH=" + seed}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r, w := io.Pipe()
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	k := &KMS{cmd: cmd, out: &Tail{Max: 16 << 10}, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); w.Close(); close(k.exited) }()
	port := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			fmt.Fprintln(k.out, sc.Text())
			if m := kmsStarted.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case port <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, r)
	}()
	select {
	case p := <-port:
		k.Endpoint = "http://127.0.0.1:" + p
		return k, nil
	case <-k.exited:
		return nil, fmt.Errorf("local-kms exited before it served:\n%s", k.out)
	case <-time.After(30 * time.Second):
		k.Stop()
		return nil, fmt.Errorf("local-kms did not log its port within 30 s:\n%s", k.out)
	}
}

// Stop ends local-kms and waits.
func (k *KMS) Stop() {
	k.once.Do(func() {
		_ = syscall.Kill(-k.cmd.Process.Pid, syscall.SIGKILL)
		<-k.exited
	})
}
