package sealed

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/sortie-run/sortie"
)

// StepSlots returns how many step slots of attempt of run u grants: PUT
// URLs of [sortie.StepSlotPayloadName](attempt, 0), (attempt, 1), ... in
// a row, at most [sortie.MaxStepSlots].
func (u *URLs) StepSlots(run sortie.RunID, attempt int) int {
	n := 0
	for n < sortie.MaxStepSlots && u.Put[Key(run, sortie.StepSlotPayloadName(attempt, n))] != "" {
		n++
	}
	return n
}

// slotMargin covers the rounding of an envelope's base64 ciphertext when
// sealURLs predicts the sealed size of fewer slots.
const slotMargin = 8

// sealURLs seals urls for inv's attempt ([EncodeURLs], then the
// keyring). When the sealed URLs are over
// [sortie.MaxSealedPayloadURLsBytes] it drops step slots, the last
// first, until the envelope the first seal measured (its overhead plus
// the base64 of the compressed URLs) fits, and seals once more; GET URLs
// and the result's and checkpoint's PUT URLs are never dropped. Without
// any slot still over the limit, the error names the URLs' count.
func (g *Granter) sealURLs(ctx context.Context, inv *sortie.Invocation, urls *URLs) (json.RawMessage, error) {
	sealed, plainLen, err := g.sealEncoded(ctx, inv, urls)
	if err != nil || len(sealed) <= sortie.MaxSealedPayloadURLsBytes {
		return sealed, err
	}
	if n := urls.StepSlots(inv.RunID, inv.Attempt); n > 0 {
		if err := trimSlots(inv, urls, n, len(sealed)-base64.StdEncoding.EncodedLen(plainLen)); err != nil {
			return nil, err
		}
		if sealed, _, err = g.sealEncoded(ctx, inv, urls); err != nil || len(sealed) <= sortie.MaxSealedPayloadURLsBytes {
			return sealed, err
		}
	}
	return nil, fmt.Errorf("the payload URLs of run %s attempt %d are %d bytes sealed, over sortie.MaxSealedPayloadURLsBytes (%d): %d GET URLs (%d of recorded steps kept by reference) and %d PUT URLs (%d step slots)",
		inv.RunID, inv.Attempt, len(sealed), sortie.MaxSealedPayloadURLsBytes, len(urls.Get), len(inv.StepResultRefs()), len(urls.Put), urls.StepSlots(inv.RunID, inv.Attempt))
}

// sealEncoded seals the encoding of urls for inv's attempt and returns
// the envelope and the length of what it sealed.
func (g *Granter) sealEncoded(ctx context.Context, inv *sortie.Invocation, urls *URLs) (json.RawMessage, int, error) {
	plain, err := EncodeURLs(urls)
	if err != nil {
		return nil, 0, err
	}
	defer clear(plain)
	sealed, err := g.SealPayloadURLs(ctx, inv, plain)
	return sealed, len(plain), err
}

// trimSlots drops the last of urls' n step slots of inv's attempt until
// an envelope of overhead bytes beside its base64 ciphertext fits
// [sortie.MaxSealedPayloadURLsBytes], or none is left.
func trimSlots(inv *sortie.Invocation, urls *URLs, n, overhead int) error {
	for ; n > 0; n-- {
		delete(urls.Put, Key(inv.RunID, sortie.StepSlotPayloadName(inv.Attempt, n-1)))
		plain, err := EncodeURLs(urls)
		if err != nil {
			return err
		}
		fits := overhead+base64.StdEncoding.EncodedLen(len(plain))+slotMargin <= sortie.MaxSealedPayloadURLsBytes
		clear(plain)
		if fits {
			return nil
		}
	}
	return nil
}
