package envelope

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/strictjson"
)

// Large envelopes carry payloads too big for a JSON envelope (run
// variables and results kept in object storage): the same envelope, key
// layers and associated data, framed in binary so the ciphertext is not
// base64-encoded.
//
//	"sortie.envelope.large/v1\n"   label (25 bytes)
//	uint32 big-endian               length of the header
//	header                          the JSON envelope without "ct"
//	ciphertext                      12-byte IV || ciphertext || 16-byte GCM tag
const largeLabel = "sortie.envelope.large/v1\n"

// MaxLargePlaintextBytes is the largest plaintext SealLarge takes (1 GiB).
const MaxLargePlaintextBytes = 1 << 30

// maxLargeHeaderBytes bounds the JSON header of a large envelope.
const maxLargeHeaderBytes = 8 << 10

// SealLarge is [Keeper.Seal] for plaintexts of up to
// [MaxLargePlaintextBytes]: it returns a large envelope (binary, see
// OpenLarge). Errors are those of Seal.
func (k *Keeper) SealLarge(ctx context.Context, plaintext []byte, b Binding) ([]byte, error) {
	if len(plaintext) > MaxLargePlaintextBytes {
		return nil, sortie.Invalidf("plaintext", "%d bytes, limit %d", len(plaintext), MaxLargePlaintextBytes)
	}
	e, _, err := k.sealParts(ctx, plaintext, b)
	if err != nil {
		return nil, err
	}
	header, err := json.Marshal(&largeHeader{V: e.V, KID: e.KID, Ctx: e.Ctx, DK: e.DK})
	if err != nil {
		return nil, fmt.Errorf("seal: encode envelope header: %w", err)
	}
	out := make([]byte, 0, len(largeLabel)+4+len(header)+len(e.CT))
	out = append(out, largeLabel...)
	out = binary.BigEndian.AppendUint32(out, uint32(len(header)))
	out = append(out, header...)
	return append(out, e.CT...), nil
}

// largeHeader is the header of a large envelope: the envelope without its
// ciphertext.
type largeHeader struct {
	V   int               `json:"v"`
	KID string            `json:"kid"`
	Ctx map[string]string `json:"ctx"`
	DK  []byte            `json:"dk"`
}

// OpenLarge opens what SealLarge sealed with binding b. Errors are those
// of [Keeper.Open]: a frame that is not a large envelope wraps
// [ErrMalformed].
func (k *Keeper) OpenLarge(ctx context.Context, sealed []byte, b Binding) ([]byte, error) {
	if err := b.Validate(); err != nil {
		return nil, err
	}
	e, err := decodeLarge(sealed)
	if err != nil {
		return nil, err
	}
	pt, _, err := k.openParts(ctx, e, b)
	return pt, err
}

func decodeLarge(b []byte) (*envelope, error) {
	rest, ok := bytes.CutPrefix(b, []byte(largeLabel))
	if !ok || len(rest) < 4 {
		return nil, fmt.Errorf("open large envelope: no %q label: %w", largeLabel[:len(largeLabel)-1], ErrMalformed)
	}
	n := binary.BigEndian.Uint32(rest)
	rest = rest[4:]
	if n > maxLargeHeaderBytes || int(n) > len(rest) {
		return nil, fmt.Errorf("open large envelope: header of %d bytes, limit %d and %d left: %w", n, maxLargeHeaderBytes, len(rest), ErrMalformed)
	}
	var h largeHeader
	if err := strictjson.Unmarshal(rest[:n], &h); errors.Is(err, strictjson.ErrTrailingData) {
		return nil, fmt.Errorf("open large envelope: data after the header object: %w", ErrMalformed)
	} else if err != nil {
		return nil, fmt.Errorf("open large envelope: not an envelope header: %w", ErrMalformed)
	}
	e := envelope{V: h.V, KID: h.KID, Ctx: h.Ctx, DK: h.DK, CT: rest[n:]}
	if err := e.check(); err != nil {
		return nil, fmt.Errorf("open large envelope: %v: %w", err, ErrMalformed)
	}
	return &e, nil
}
