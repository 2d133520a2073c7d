package payload_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/s3blob"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/envelope"
	"github.com/sortie-run/sortie/internal/envelopetest"
	"github.com/sortie-run/sortie/internal/gcstest"
	"github.com/sortie-run/sortie/internal/s3test"
	"github.com/sortie-run/sortie/payload"
)

var bg = context.Background()

const canary = "canary-secret-7f3a9c"

// sealer returns an envelope Config under a local key.
func sealer(t testing.TB) *envelope.Config {
	t.Helper()
	return envelopetest.Config(t, "local-1")
}

type fixture struct {
	store  *payload.Store
	bucket *blob.Bucket
}

// stores runs fn against a fileblob store, one on an S3-protocol server
// and one on a Cloud Storage emulator, both on loopback.
func stores(t *testing.T, opts *payload.Options, fn func(t *testing.T, f fixture)) {
	t.Run("file", func(t *testing.T) {
		s, b, err := payload.OpenFile(t.TempDir(), sealer(t), opts)
		if err != nil {
			t.Fatalf("OpenFile = %v", err)
		}
		t.Cleanup(func() { b.Close() })
		fn(t, fixture{s, b})
	})
	t.Run("s3", func(t *testing.T) {
		srv := s3test.Start(t, "payloads")
		s, b, err := payload.OpenURL(bg, srv.BlobURL(), sealer(t), opts)
		if err != nil {
			t.Fatalf("OpenURL(%s) = %v", srv.BlobURL(), err)
		}
		t.Cleanup(func() { b.Close() })
		fn(t, fixture{s, b})
	})
	t.Run("gs", func(t *testing.T) {
		srv := gcstest.Start(t, "payloads")
		b := srv.Bucket(t)
		fn(t, fixture{payload.New(b, srv.Name(), sealer(t), opts), b})
	})
}

// bigValue returns n bytes of JSON holding the canary.
func bigValue(n int) []byte {
	body := strings.Repeat(canary+" ", n/(len(canary)+1)+1)
	return []byte(`{"doc":"` + body[:n-10] + `"}`)
}

var (
	testTime = time.UnixMilli(1_780_000_000_000)
	run1     = sortie.NewRunID(testTime)
)

func TestRoundTripSealed(t *testing.T) {
	stores(t, nil, func(t *testing.T, f fixture) {
		value := bigValue(5 << 20)
		ref, err := f.store.Put(bg, run1, "probe", "variables", "variables", value)
		if err != nil {
			t.Fatalf("Put(5 MB) = %v", err)
		}
		if ref.Key != "runs/"+string(run1)+"/variables" || ref.Size != int64(len(value)) {
			t.Errorf("Put = %+v, want key runs/%s/variables and size %d", ref, run1, len(value))
		}
		got, err := f.store.Get(bg, run1, "probe", ref)
		if err != nil || !bytes.Equal(got, value) {
			t.Fatalf("Get = %d bytes, %v; want the %d bytes put", len(got), err, len(value))
		}
		raw, err := f.bucket.ReadAll(bg, ref.Key)
		if err != nil {
			t.Fatalf("ReadAll(%s) = %v", ref.Key, err)
		}
		if bytes.Contains(raw, []byte(canary)) {
			t.Fatal("the stored object holds the canary in plaintext")
		}
	})
}

// The embedded store's files are the owner's alone, as the rest of the
// state directory: objects 0600 in 0700 directories, whatever the umask.
func TestFileStoreOwnerOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "payloads")
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	s, b, err := payload.OpenFile(dir, sealer(t), nil)
	if err != nil {
		t.Fatalf("OpenFile = %v", err)
	}
	defer b.Close()
	for _, name := range []string{"variables", "result-1"} {
		if _, err := s.Put(bg, run1, "probe", name, name, []byte(`{"a":1}`)); err != nil {
			t.Fatalf("Put(%s) = %v", name, err)
		}
	}
	files := 0
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = fs.ModeDir | 0o700
		} else {
			files++
		}
		if info.Mode() != want {
			t.Errorf("%s has mode %v, want %v", p, info.Mode(), want)
		}
		return nil
	})
	if err != nil || files != 2 {
		t.Errorf("walk = %v with %d files, want the 2 objects and no other file", err, files)
	}
}

func TestFlippedByteRefused(t *testing.T) {
	stores(t, nil, func(t *testing.T, f fixture) {
		ref, err := f.store.Put(bg, run1, "probe", "result-1", "result", bigValue(300<<10))
		if err != nil {
			t.Fatalf("Put = %v", err)
		}
		raw, _ := f.bucket.ReadAll(bg, ref.Key)
		raw[len(raw)/2] ^= 0x01
		if err := f.bucket.WriteAll(bg, ref.Key, raw, nil); err != nil {
			t.Fatal(err)
		}
		_, err = f.store.Get(bg, run1, "probe", ref)
		if !errors.Is(err, sortie.ErrPayloadIntegrity) || !strings.Contains(err.Error(), "SHA-256") {
			t.Fatalf("Get(one byte flipped) = %v, want ErrPayloadIntegrity naming the SHA-256", err)
		}
	})
}

// An object of one key or run moved under another, with its hash, does
// not open: it is bound to the run, agent and key it was sealed for.
func TestMovedObjectRefused(t *testing.T) {
	stores(t, nil, func(t *testing.T, f fixture) {
		ref, err := f.store.Put(bg, run1, "probe", "result-1", "result", []byte(`"a"`))
		if err != nil {
			t.Fatalf("Put = %v", err)
		}
		raw, _ := f.bucket.ReadAll(bg, ref.Key)
		moved := *ref
		moved.Key = payload.Key(run1, "variables")
		if err := f.bucket.WriteAll(bg, moved.Key, raw, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := f.store.Get(bg, run1, "probe", &moved); !errors.Is(err, sortie.ErrPayloadIntegrity) {
			t.Errorf("Get(object under another key) = %v, want ErrPayloadIntegrity", err)
		}
		if _, err := f.store.Get(bg, run1, "other", ref); !errors.Is(err, sortie.ErrPayloadIntegrity) {
			t.Errorf("Get(another agent) = %v, want ErrPayloadIntegrity", err)
		}
		if _, err := f.store.Get(bg, sortie.NewRunID(testTime), "probe", ref); !errors.Is(err, sortie.ErrPayloadIntegrity) {
			t.Errorf("Get(another run) = %v, want ErrPayloadIntegrity", err)
		}
	})
}

func TestLimits(t *testing.T) {
	opts := &payload.Options{Limits: sortie.PayloadLimits{MaxPayloadBytes: 1 << 20, MaxRunBytes: 3 << 20 / 2}}
	stores(t, opts, func(t *testing.T, f fixture) {
		_, err := f.store.Put(bg, run1, "probe", "variables", "variables", bigValue(1<<20+1))
		var ve *sortie.ValidationError
		if !errors.As(err, &ve) || ve.Field != "variables" || !strings.Contains(err.Error(), "1048576") {
			t.Fatalf("Put(over the per-payload limit) = %v, want a ValidationError for variables naming 1048576", err)
		}
		if _, err := f.store.Put(bg, run1, "probe", "variables", "variables", bigValue(1<<20)); err != nil {
			t.Fatalf("Put(1 MiB) = %v", err)
		}
		_, err = f.store.Put(bg, run1, "probe", "result-1", "result", bigValue(1<<20))
		if !errors.As(err, &ve) || ve.Field != "result" || !strings.Contains(err.Error(), "per-run limit of 1572864") {
			t.Fatalf("Put(over the per-run total) = %v, want a ValidationError naming the per-run limit", err)
		}
		if _, err := f.store.Put(bg, run1, "probe", "variables", "variables", bigValue(1<<20)); err != nil {
			t.Errorf("Put(the same key again) = %v, want it replaced within the total", err)
		}
	})
}

func TestDeleteRun(t *testing.T) {
	stores(t, nil, func(t *testing.T, f fixture) {
		other := sortie.NewRunID(testTime)
		for _, r := range []sortie.RunID{run1, other} {
			for _, name := range []string{"variables", "result-1"} {
				if _, err := f.store.Put(bg, r, "probe", name, name, []byte(`{}`)); err != nil {
					t.Fatalf("Put(%s, %s) = %v", r, name, err)
				}
			}
		}
		if err := f.store.DeleteRun(bg, run1); err != nil {
			t.Fatalf("DeleteRun = %v", err)
		}
		if keys := listKeys(t, f.bucket); len(keys) != 2 || !strings.HasPrefix(keys[0], "runs/"+string(other)) {
			t.Fatalf("after DeleteRun(%s) the bucket holds %q, want only run %s's 2 objects", run1, keys, other)
		}
		ref := &sortie.PayloadRef{Store: f.store.Name(), Key: payload.Key(run1, "variables"), Size: 2, SHA256: strings.Repeat("0", 64)}
		_, err := f.store.Get(bg, run1, "probe", ref)
		if !errors.Is(err, sortie.ErrPayloadIntegrity) || errors.Is(err, sortie.ErrNotFound) ||
			!strings.Contains(err.Error(), ref.Key) || !strings.Contains(err.Error(), ref.SHA256) {
			t.Errorf("Get(deleted) = %v, want ErrPayloadIntegrity (not the run's ErrNotFound) naming the key and the SHA-256", err)
		}
		if err := f.store.DeleteRun(bg, run1); err != nil {
			t.Errorf("DeleteRun(again) = %v, want nil", err)
		}
	})
}

// On a fileblob store DeleteRun also removes the run's directory, which
// fileblob leaves empty, and keeps the other run's.
func TestDeleteRunRemovesItsDirectory(t *testing.T) {
	dir := t.TempDir()
	s, b, err := payload.OpenFile(dir, sealer(t), nil)
	if err != nil {
		t.Fatalf("OpenFile = %v", err)
	}
	t.Cleanup(func() { b.Close() })
	other := sortie.NewRunID(testTime)
	for _, r := range []sortie.RunID{run1, other} {
		if _, err := s.Put(bg, r, "probe", "variables", "variables", []byte(`{}`)); err != nil {
			t.Fatalf("Put(%s) = %v", r, err)
		}
	}
	if err := s.DeleteRun(bg, run1); err != nil {
		t.Fatalf("DeleteRun = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "runs", string(run1))); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat(the deleted run's directory) = %v, want it removed", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "runs", string(other))); err != nil {
		t.Errorf("Stat(the other run's directory) = %v, want it kept", err)
	}
	if err := s.DeleteRun(bg, run1); err != nil {
		t.Errorf("DeleteRun(again) = %v, want nil", err)
	}
}

func listKeys(t *testing.T, b *blob.Bucket) []string {
	t.Helper()
	var keys []string
	it := b.List(nil)
	for {
		o, err := it.Next(bg)
		if err != nil {
			break
		}
		if !strings.HasSuffix(o.Key, ".attrs") {
			keys = append(keys, o.Key)
		}
	}
	return keys
}

// Sweep deletes the objects of old runs the control plane does not hold,
// and keeps those of held runs and of young ones (a submission in flight).
func TestSweep(t *testing.T) {
	stores(t, nil, func(t *testing.T, f fixture) {
		now := testTime.Add(time.Hour)
		held, orphan, young := sortie.NewRunID(testTime), sortie.NewRunID(testTime), sortie.NewRunID(now.Add(-time.Minute))
		for _, r := range []sortie.RunID{held, orphan, young} {
			if _, err := f.store.Put(bg, r, "probe", "variables", "variables", []byte(`{}`)); err != nil {
				t.Fatalf("Put(%s) = %v", r, err)
			}
		}
		asked := map[sortie.RunID]bool{}
		keep := func(_ context.Context, id sortie.RunID) (bool, error) {
			asked[id] = true
			return id == held, nil
		}
		n, err := f.store.Sweep(bg, keep, now.Add(-10*time.Minute))
		if err != nil || n != 1 {
			t.Fatalf("Sweep = %d, %v; want 1 run swept", n, err)
		}
		if asked[young] || !asked[held] || !asked[orphan] {
			t.Errorf("Sweep asked about %v; want the two old runs only", asked)
		}
		keys := listKeys(t, f.bucket)
		if len(keys) != 2 || slices.Contains(keys, payload.Key(orphan, "variables")) {
			t.Errorf("after Sweep the bucket holds %q, want the held and the young run's objects", keys)
		}
	})
}
