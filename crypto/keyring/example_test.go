package keyring_test

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/sortie-run/sortie/crypto/keyring"
)

func Example() {
	rule := &keyring.Rule[[]byte]{Kind: "demo key", ID: regexp.MustCompile(`^[a-z0-9-]{1,32}$`), IDText: "1-32 of a-z, 0-9, '-'"}
	ring, _ := keyring.New(rule, "key-2025", []byte("old secret"))

	// Rotate: add, make primary, and remove the old key once nothing
	// it made is still presented.
	_ = ring.Add("key-2026", []byte("new secret"))
	_ = ring.SetPrimary("key-2026")
	id, _ := ring.PrimaryKey()
	fmt.Println("signs with", id)
	_ = ring.Remove("key-2025")

	_, err := ring.Key("key-2025")
	fmt.Println(errors.Is(err, keyring.ErrUnknownKey))
	fmt.Println(err)
	// Output:
	// signs with key-2026
	// true
	// key ID "key-2025" is not in the keyring (it holds "key-2026"): key ID not in the keyring
}
