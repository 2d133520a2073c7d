package localkey

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/sortie-run/sortie/crypto/envelope"
	"github.com/sortie-run/sortie/crypto/internal/aesgcm"
	"github.com/sortie-run/sortie/internal/strictjson"
)

// FileVersion is the format version of a key file.
const FileVersion = "sortie.localkey/v1"

// KeyBytes is the size of a local key: AES-256.
const KeyBytes = 32

// maxFileBytes bounds what Load reads.
const maxFileBytes = 4 << 10

// wrapLabel starts the associated data of every wrapped data key.
const wrapLabel = "sortie.localkey/v1 data key\x00"

// KEK is an [envelope.KEK] held in this process: AES-256-GCM (Tink's format, package crypto/internal/aesgcm) under
// a key from a file. It is the development default, not a key-management
// service: whoever reads the file can open every envelope. It is safe for
// concurrent use.
type KEK struct {
	aead     *aesgcm.AEAD
	requests atomic.Int64
}

var _ envelope.KEK = (*KEK)(nil)

// New returns a KEK with key, which must be [KeyBytes] bytes; New keeps
// no reference to it.
func New(key []byte) (*KEK, error) {
	if len(key) != KeyBytes {
		return nil, fmt.Errorf("localkey: key is %d bytes, want %d", len(key), KeyBytes)
	}
	a, err := aesgcm.New(key)
	if err != nil {
		return nil, fmt.Errorf("localkey: %w", err)
	}
	return &KEK{aead: a}, nil
}

// Requests returns how many GenerateDataKey and Decrypt calls the KEK
// served.
func (k *KEK) Requests() int64 { return k.requests.Load() }

// GenerateDataKey implements [envelope.KEK]: a random data key, wrapped
// with ec (encoded by [envelope.EncodeContext]) as associated data.
func (k *KEK) GenerateDataKey(_ context.Context, ec map[string]string) (plaintext, wrapped []byte, err error) {
	k.requests.Add(1)
	key := make([]byte, envelope.DataKeyBytes)
	if _, err := rand.Read(key); err != nil {
		return nil, nil, fmt.Errorf("localkey: random data key: %w", err)
	}
	return key, k.aead.Seal(key, associatedData(ec)), nil
}

// Decrypt implements [envelope.KEK]. A wrapped key that was tampered with,
// wrapped by another key or with another context wraps [envelope.ErrAuth].
func (k *KEK) Decrypt(_ context.Context, wrapped []byte, ec map[string]string) ([]byte, error) {
	k.requests.Add(1)
	key, err := k.aead.Open(wrapped, associatedData(ec))
	if err != nil {
		return nil, fmt.Errorf("localkey: unwrap data key: another key or context, or tampered with: %w", envelope.ErrAuth)
	}
	return key, nil
}

func associatedData(ec map[string]string) []byte {
	return append([]byte(wrapLabel), envelope.EncodeContext(ec)...)
}

type keyFile struct {
	Version string `json:"version"`
	Key     []byte `json:"key"`
}

// Load reads the key file at path, written by [LoadOrCreate]. It refuses a
// file that is not a regular file or that its group or others may read or
// write (the mode must be 0600 or stricter), and a malformed one.
func Load(path string) (*KEK, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("localkey: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("localkey: %w", err)
	}
	if !st.Mode().IsRegular() || st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("localkey: key file %s has mode %s; want a regular file with mode 0600 (its owner only)", path, st.Mode())
	}
	b, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	defer clear(b)
	if err != nil {
		return nil, fmt.Errorf("localkey: read %s: %w", path, err)
	}
	return parse(path, b)
}

func parse(path string, b []byte) (*KEK, error) {
	var kf keyFile
	if len(b) > maxFileBytes || strictjson.Unmarshal(b, &kf) != nil {
		return nil, fmt.Errorf("localkey: key file %s is not a %s key file", path, FileVersion)
	}
	defer clear(kf.Key)
	if kf.Version != FileVersion {
		return nil, fmt.Errorf("localkey: key file %s has version %q, want %q", path, kf.Version, FileVersion)
	}
	return New(kf.Key)
}

// LoadOrCreate loads the key file at path, or creates it with a new random
// key and mode 0600 when it does not exist (created is then true). Several
// processes may call it at once: exactly one creates the file, and all
// load the same key. The directory must exist.
func LoadOrCreate(path string) (k *KEK, created bool, err error) {
	k, err = Load(path)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		return k, false, err
	}
	if err := create(path); errors.Is(err, os.ErrExist) {
		k, err = Load(path)
		return k, false, err
	} else if err != nil {
		return nil, false, err
	}
	k, err = Load(path)
	return k, err == nil, err
}

// create writes a new key file at path: a temporary file (mode 0600),
// synced, then linked to path, which fails if path exists, so a reader
// never sees a partial file.
func create(path string) error {
	key := make([]byte, KeyBytes)
	defer clear(key)
	if _, err := rand.Read(key); err != nil {
		return fmt.Errorf("localkey: random key: %w", err)
	}
	b, err := json.Marshal(&keyFile{Version: FileVersion, Key: key})
	if err != nil {
		return fmt.Errorf("localkey: encode key file: %w", err)
	}
	defer clear(b)
	tmp, err := os.CreateTemp(filepath.Dir(path), ".localkey-*")
	if err != nil {
		return fmt.Errorf("localkey: create key file: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(append(b, '\n'))
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("localkey: write key file: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		return fmt.Errorf("localkey: create key file: %w", err)
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("localkey: sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("localkey: sync %s: %w", dir, err)
	}
	return nil
}
