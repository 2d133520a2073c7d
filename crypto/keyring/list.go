package keyring

import (
	"strings"

	"github.com/sortie-run/sortie"
)

// ParseList parses a keyring as configuration writes it,
// "ID=KEY[,ID=KEY]" (spaces around entries ignored), the first primary,
// into (ID, KEY) pairs; KEY is whatever the kind names a key by (a KMS
// key ARN, a Cloud KMS key name). A blank v is no pairs. An entry that is
// not ID=KEY is a [*sortie.ValidationError] naming field. IDs and keys are
// checked by the ring they are added to, not here.
func ParseList(field, v string) ([][2]string, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var out [][2]string
	for _, kv := range strings.Split(v, ",") {
		id, key, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || id == "" || key == "" {
			return nil, sortie.Invalidf(field, "%q is not ID=KEY", kv)
		}
		out = append(out, [2]string{id, key})
	}
	return out, nil
}
