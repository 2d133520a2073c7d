package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/envelope"
	"github.com/sortie-run/sortie/crypto/localkey"
	"github.com/sortie-run/sortie/crypto/sign"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/internal/strictjson"
	a2aserver "github.com/sortie-run/sortie/server/a2a"
	"github.com/sortie-run/sortie/server/callback"
	"github.com/sortie-run/sortie/server/push"
)

// localKeyID is the local key's ID in its envelope keyring.
const localKeyID = "local"

// localSealer is the embedded engine's Sealer: none (inline configuration
// off) without ConfigEnv, else StateDir's local key, created on first use,
// with the data-key cache.
func (h *Host) localSealer() (sortie.Sealer, error) {
	if len(h.cfg.ConfigEnv) == 0 {
		return nil, nil
	}
	kek, _, err := localkey.LoadOrCreate(filepath.Join(h.dir, LocalKeyFile))
	if err != nil {
		return nil, fmt.Errorf("inline configuration: %w", err)
	}
	return localConfig(kek)
}

// localOpener is a local worker's opener of inline configuration: none
// without ConfigEnv, else StateDir's local key, which the host made.
func localOpener(cfg Config) (functions.Opener, error) {
	if len(cfg.ConfigEnv) == 0 {
		return nil, nil
	}
	dir, err := filepath.Abs(cfg.StateDir)
	if err != nil {
		return nil, sortie.Invalidf("StateDir", "%q: %v", cfg.StateDir, err)
	}
	kek, err := localkey.Load(filepath.Join(dir, LocalKeyFile))
	if err != nil {
		return nil, fmt.Errorf("inline configuration: %w", err)
	}
	return localConfig(kek)
}

// localConfig seals and opens inline configuration with kek, caching
// data keys.
func localConfig(kek envelope.KEK) (*envelope.Config, error) {
	k, err := localKeeper(kek, &envelope.Options{Cache: &envelope.CacheOptions{}})
	if err != nil {
		return nil, fmt.Errorf("inline configuration: %w", err)
	}
	return envelope.NewConfig(k), nil
}

// localKeeper is the keeper of a keyring holding the local key alone.
func localKeeper(kek envelope.KEK, opts *envelope.Options) (*envelope.Keeper, error) {
	ring, err := envelope.NewKeyring(localKeyID, kek)
	if err != nil {
		return nil, err
	}
	return envelope.New(ring, opts), nil
}

// pushTokenSealer seals A2A push tokens with StateDir's local key
// (created on first use; a secret shared by every replica in production),
// bound to the run and configuration.
func (h *Host) pushTokenSealer() (a2aserver.TokenSealer, error) {
	kek, _, err := localkey.LoadOrCreate(filepath.Join(h.dir, LocalKeyFile))
	if err != nil {
		return nil, fmt.Errorf("push tokens: %w", err)
	}
	k, err := localKeeper(kek, nil)
	if err != nil {
		return nil, fmt.Errorf("push tokens: %w", err)
	}
	return a2aserver.EnvelopeSealer(k), nil
}

// openCallbacks loads (or creates) StateDir's callback keys and the
// issuer of callback reports to API.CallbackURL (or PublicURL), with
// API.WorkerCallbacks.
func (h *Host) openCallbacks() error {
	if h.cfg.API == nil || !h.cfg.API.WorkerCallbacks {
		return nil
	}
	var err error
	if h.keys, err = loadCallbackKeys(filepath.Join(h.dir, CallbackKeysFile)); err != nil {
		return err
	}
	base := h.cfg.API.callbackBase()
	if h.issuer, err = callback.NewIssuer(h.keys, base, nil); err != nil {
		return sortie.Invalidf("API.CallbackURL", "%.200q: must be an absolute http(s) URL without user info, query or fragment", sortie.SafeURL(base))
	}
	return nil
}

// loadCallbackKeys loads the keyring file, creating it with one fresh key.
func loadCallbackKeys(path string) (*callback.Keyring, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		k, kerr := callback.NewKey("c1")
		if kerr != nil {
			return nil, kerr
		}
		b = []byte(k.Encode() + "\n")
		if err = os.WriteFile(path, b, 0o600); err != nil {
			return nil, fmt.Errorf("create callback keys %s: %w", path, err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("read callback keys: %w", err)
	}
	kr, err := callback.ParseKeyring(string(b))
	if err != nil {
		return nil, sortie.Invalidf("StateDir", "callback keys %s: %v", filepath.Base(path), err)
	}
	return kr, nil
}

// webhookKeys is the webhook keys file's format.
type webhookKeys struct {
	Primary string              `json:"primary"`
	Keys    map[string][]string `json:"keys"`
}

// loadWebhookKeys loads path, creating it with one fresh key when missing.
func loadWebhookKeys(path string) (push.Keys, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		secret, serr := sign.NewSecret()
		if serr != nil {
			return push.Keys{}, serr
		}
		b, _ = json.MarshalIndent(webhookKeys{Primary: "k1", Keys: map[string][]string{"k1": {secret}}}, "", "  ")
		if err = os.WriteFile(path, b, 0o600); err != nil {
			return push.Keys{}, fmt.Errorf("create webhook keys %s: %w", path, err)
		}
	} else if err != nil {
		return push.Keys{}, fmt.Errorf("read webhook keys: %w", err)
	}
	var f webhookKeys
	if err := strictjson.Unmarshal(b, &f); err != nil {
		return push.Keys{}, sortie.Invalidf("StateDir", "webhook keys %s: %v", filepath.Base(path), err)
	}
	k, err := push.SecretKeys(f.Primary, f.Keys)
	if err != nil {
		return push.Keys{}, sortie.Invalidf("StateDir", "webhook keys %s: %v", filepath.Base(path), err)
	}
	return k, nil
}
