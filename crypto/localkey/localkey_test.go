package localkey_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sortie-run/sortie/crypto/envelope"
	"github.com/sortie-run/sortie/crypto/localkey"
)

var ec = map[string]string{"purpose": "invocation-config", "agent": "probe"}

func TestLoadOrCreateMakesAPrivateFileOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "local.key")
	k1, created, err := localkey.LoadOrCreate(path)
	if err != nil || !created {
		t.Fatalf("LoadOrCreate(new path) = created %v, %v; want created", created, err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("key file mode = %v, want 0600", st.Mode().Perm())
	}
	k2, created, err := localkey.LoadOrCreate(path)
	if err != nil || created {
		t.Fatalf("LoadOrCreate(existing) = created %v, %v; want loaded", created, err)
	}
	key, wrapped, err := k1.GenerateDataKey(context.Background(), ec)
	if err != nil {
		t.Fatal(err)
	}
	got, err := k2.Decrypt(context.Background(), wrapped, ec)
	if err != nil || !bytes.Equal(got, key) {
		t.Fatalf("Decrypt with the reloaded key = %v; want the data key", err)
	}
}

// Concurrent callers all end up with the one key that was created.
func TestLoadOrCreateConcurrently(t *testing.T) {
	path := filepath.Join(t.TempDir(), "local.key")
	const n = 8
	keks := make([]*localkey.KEK, n)
	created := make([]bool, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var err error
			keks[i], created[i], err = localkey.LoadOrCreate(path)
			if err != nil {
				t.Errorf("LoadOrCreate #%d = %v", i, err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	makers := 0
	for _, c := range created {
		if c {
			makers++
		}
	}
	if makers != 1 {
		t.Errorf("%d of %d concurrent LoadOrCreate calls created the file, want 1", makers, n)
	}
	_, wrapped, err := keks[0].GenerateDataKey(context.Background(), ec)
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range keks {
		if _, err := k.Decrypt(context.Background(), wrapped, ec); err != nil {
			t.Errorf("caller %d cannot unwrap caller 0's data key: %v", i, err)
		}
	}
	if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".localkey-*")); len(leftovers) != 0 {
		t.Errorf("temporary files left behind: %v", leftovers)
	}
}

func TestLoadRefusesBadFiles(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.key")
	if _, _, err := localkey.LoadOrCreate(good); err != nil {
		t.Fatal(err)
	}
	content, _ := os.ReadFile(good)
	for name, tc := range map[string]struct {
		body string
		mode os.FileMode
		want string
	}{
		"group readable": {string(content), 0o640, "mode"},
		"not JSON":       {"hello", 0o600, "not a sortie.localkey/v1 key file"},
		"short key":      {`{"version":"sortie.localkey/v1","key":"AAAA"}`, 0o600, "want 32"},
		"other version":  {`{"version":"v9","key":"AAAA"}`, 0o600, "version"},
		"unknown field":  {`{"version":"sortie.localkey/v1","key":"AAAA","x":1}`, 0o600, "not a sortie.localkey/v1 key file"},
		"trailing brace": {strings.TrimSpace(string(content)) + "}", 0o600, "not a sortie.localkey/v1 key file"},
		"two values":     {string(content) + string(content), 0o600, "not a sortie.localkey/v1 key file"},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		if err := os.WriteFile(path, []byte(tc.body), tc.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, tc.mode); err != nil {
			t.Fatal(err)
		}
		if _, err := localkey.Load(path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Load(%s) = %v, want an error mentioning %q", name, err, tc.want)
		}
	}
	if _, err := localkey.Load(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want os.ErrNotExist", err)
	}
	if _, err := localkey.Load(dir); err == nil {
		t.Error("Load(a directory) = nil error, want an error")
	}
}

func TestDecryptRefusesAnotherContextOrKey(t *testing.T) {
	a, _ := localkey.New(bytes.Repeat([]byte{1}, localkey.KeyBytes))
	b, _ := localkey.New(bytes.Repeat([]byte{2}, localkey.KeyBytes))
	_, wrapped, err := a.GenerateDataKey(context.Background(), ec)
	if err != nil {
		t.Fatal(err)
	}
	other := map[string]string{"purpose": "config-at-rest", "agent": "probe"}
	if _, err := a.Decrypt(context.Background(), wrapped, other); !errors.Is(err, envelope.ErrAuth) {
		t.Errorf("Decrypt with context %v = %v, want envelope.ErrAuth", other, err)
	}
	if _, err := b.Decrypt(context.Background(), wrapped, ec); !errors.Is(err, envelope.ErrAuth) {
		t.Errorf("Decrypt with another key = %v, want envelope.ErrAuth", err)
	}
	if n := a.Requests(); n != 2 {
		t.Errorf("Requests() = %d, want 2", n)
	}
	if _, err := localkey.New(make([]byte, 16)); err == nil {
		t.Error("New(16-byte key) = nil error, want an error")
	}
}
