package localkey_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/sortie-run/sortie/crypto/envelope"
	"github.com/sortie-run/sortie/crypto/localkey"
)

// The embedded default: a key file in the state directory, created with
// mode 0600 on first use.
func ExampleLoadOrCreate() {
	dir, err := os.MkdirTemp("", "localkey-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "local.key")
	kek, created, err := localkey.LoadOrCreate(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	st, _ := os.Stat(path)
	fmt.Println(created, st.Mode().Perm())
	ring, err := envelope.NewKeyring("local", kek)
	fmt.Println(ring.Primary(), err)
	// Output:
	// true -rw-------
	// local <nil>
}
