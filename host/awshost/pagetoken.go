package awshost

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// The variables a host reads its page-token key from (cmd/sortie and
// every host of a deployment set the same one).
const (
	// EnvPageTokenKey is the page-token key: at least 16 random bytes,
	// base64 (standard or URL alphabet, padded or not), e.g.
	// `openssl rand -base64 32`.
	EnvPageTokenKey = "SORTIE_PAGE_TOKEN_KEY"
	// EnvPageTokenKeySealed is the page-token key sealed by the
	// deployment's KMS key: the base64 KMS ciphertext of the key's base64
	// text, encrypted with the encryption context purpose=[PageTokenPurpose]
	// (terraform/aws's output page_token_key_sealed).
	EnvPageTokenKeySealed = "SORTIE_PAGE_TOKEN_KEY_SEALED"
	// PageTokenPurpose is the encryption context purpose of a sealed
	// page-token key; a host's kms:Decrypt is conditioned on it.
	PageTokenPurpose = "page-token-key"
)

// ParsePageTokenKey decodes value, the base64 of a key of at least
// [controlplane.MinPageTokenKeyBytes] bytes or of its KMS ciphertext; ""
// is no key (nil). Errors are [*sortie.ValidationError]s naming name and
// never quoting the value.
func ParsePageTokenKey(name, value string) ([]byte, error) {
	value = strings.TrimSpace(value)
	if value == "" {
		return nil, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(value); err == nil {
			if len(b) < controlplane.MinPageTokenKeyBytes {
				return nil, sortie.Invalidf(name, "%d bytes, want at least %d random bytes", len(b), controlplane.MinPageTokenKeyBytes)
			}
			return b, nil
		}
	}
	return nil, sortie.Invalidf(name, "not base64 (make one with `openssl rand -base64 32`)")
}

// pageTokenKey is cfg.PageTokenKey, or cfg.SealedPageTokenKey opened with
// KMS (one Decrypt), or nil when neither is set.
func (h *Host) pageTokenKey(ctx context.Context) ([]byte, error) {
	switch {
	case h.cfg.PageTokenKey != nil && h.cfg.SealedPageTokenKey != nil:
		return nil, sortie.Invalidf("PageTokenKey", "set either the page-token key or its sealed form, not both")
	case h.cfg.SealedPageTokenKey == nil:
		return h.cfg.PageTokenKey, nil
	}
	out, err := h.kms.Decrypt(ctx, &kms.DecryptInput{CiphertextBlob: h.cfg.SealedPageTokenKey,
		EncryptionContext: map[string]string{"purpose": PageTokenPurpose}})
	if err != nil {
		return nil, fmt.Errorf("awshost: SealedPageTokenKey: open with KMS (encryption context purpose=%s): %w", PageTokenPurpose, err)
	}
	key, err := ParsePageTokenKey("SealedPageTokenKey", string(out.Plaintext))
	if err != nil {
		return nil, fmt.Errorf("awshost: the sealed page-token key does not hold a key's base64: %w", err)
	}
	return key, nil
}
