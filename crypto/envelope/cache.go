package envelope

import (
	"bytes"
	"sync"
	"time"
)

// CacheOptions bounds the data-key cache. Zero fields take the defaults.
type CacheOptions struct {
	// MaxAge is how long a data key is used after the key-management
	// service made or unwrapped it. Optional; defaults to 5 minutes.
	MaxAge time.Duration
	// MaxUses is how many Seal calls one generated data key serves, and
	// how many Open calls one unwrapped data key serves. Optional;
	// defaults to 1000.
	MaxUses int
	// MaxEntries bounds the data keys held, for sealing and for opening
	// each; the oldest is dropped first. Optional; defaults to 256.
	MaxEntries int
}

func (o CacheOptions) withDefaults() CacheOptions {
	if o.MaxAge <= 0 {
		o.MaxAge = 5 * time.Minute
	}
	if o.MaxUses <= 0 {
		o.MaxUses = 1000
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = 256
	}
	return o
}

// cache holds plaintext data keys in memory only, for sealing (by key ID
// and context) and for opening (by key ID, wrapped key and context). A
// key is zeroed when it leaves the cache.
type cache struct {
	opts CacheOptions
	now  func() time.Time

	mu   sync.Mutex
	seq  uint64 // insertion order, for eviction
	seal map[string]*entry
	open map[string]*entry
}

type entry struct {
	key, wrapped []byte
	created      time.Time
	seq          uint64
	uses         int
}

func newCache(o CacheOptions, now func() time.Time) *cache {
	return &cache{opts: o.withDefaults(), now: now, seal: map[string]*entry{}, open: map[string]*entry{}}
}

func sealID(kid string, ec map[string]string) string {
	return string(appendField(appendField(nil, kid), string(EncodeContext(ec))))
}

func openID(kid string, wrapped []byte, ec map[string]string) string {
	return sealID(kid, ec) + string(appendField(nil, string(wrapped)))
}

// get returns copies of a live entry's key and wrapped key and counts a
// use; an entry past its age or uses is zeroed and dropped.
func (c *cache) get(m map[string]*entry, id string) (key, wrapped []byte, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := m[id]
	if !ok {
		return nil, nil, false
	}
	if c.now().Sub(e.created) >= c.opts.MaxAge || e.uses >= c.opts.MaxUses {
		drop(m, id, e)
		return nil, nil, false
	}
	e.uses++
	return bytes.Clone(e.key), bytes.Clone(e.wrapped), true
}

// put stores copies of key and wrapped, already used uses times, dropping
// the oldest entry when the map is full.
func (c *cache) put(m map[string]*entry, id string, key, wrapped []byte, uses int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := m[id]; ok {
		drop(m, id, old)
	}
	if len(m) >= c.opts.MaxEntries {
		var oldestID string
		var oldest *entry
		for k, e := range m {
			if oldest == nil || e.seq < oldest.seq {
				oldestID, oldest = k, e
			}
		}
		drop(m, oldestID, oldest)
	}
	c.seq++
	m[id] = &entry{key: bytes.Clone(key), wrapped: bytes.Clone(wrapped), created: c.now(), seq: c.seq, uses: uses}
}

func drop(m map[string]*entry, id string, e *entry) {
	clear(e.key)
	delete(m, id)
}

// sealKey returns a cached data key for sealing with kid under ec.
func (c *cache) sealKey(kid string, ec map[string]string) (key, wrapped []byte, ok bool) {
	return c.get(c.seal, sealID(kid, ec))
}

// putSealKey caches a data key just generated (and used once) for
// sealing, and for opening what it sealed.
func (c *cache) putSealKey(kid string, ec map[string]string, key, wrapped []byte) {
	c.put(c.seal, sealID(kid, ec), key, wrapped, 1)
	c.put(c.open, openID(kid, wrapped, ec), key, wrapped, 0)
}

// openKey returns a cached unwrapped data key.
func (c *cache) openKey(kid string, wrapped []byte, ec map[string]string) ([]byte, bool) {
	key, _, ok := c.get(c.open, openID(kid, wrapped, ec))
	return key, ok
}

// putOpenKey caches a data key just unwrapped (and used once).
func (c *cache) putOpenKey(kid string, wrapped []byte, ec map[string]string, key []byte) {
	c.put(c.open, openID(kid, wrapped, ec), key, wrapped, 1)
}

// purge zeroes and drops every entry.
func (c *cache) purge() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range []map[string]*entry{c.seal, c.open} {
		for id, e := range m {
			drop(m, id, e)
		}
	}
}
