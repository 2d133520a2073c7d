package envelope_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/envelope"
	"github.com/sortie-run/sortie/crypto/localkey"
)

// Seal a run's configuration for attempt 1 with the development key file,
// open it, and see that attempt 2 cannot open attempt 1's envelope.
func Example() {
	dir, err := os.MkdirTemp("", "envelope-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	kek, _, err := localkey.LoadOrCreate(filepath.Join(dir, "local.key"))
	if err != nil {
		fmt.Println(err)
		return
	}
	ring, err := envelope.NewKeyring("local", kek)
	if err != nil {
		fmt.Println(err)
		return
	}
	keeper := envelope.New(ring, &envelope.Options{Cache: &envelope.CacheOptions{}})

	ctx := context.Background()
	b := envelope.Binding{RunID: "01JRUN0000000000000000000A", Attempt: 1,
		InvocationVersion: sortie.InvocationVersion, Purpose: envelope.PurposeInvocation, Agent: "probe"}
	sealed, err := keeper.Seal(ctx, []byte(`{"API_TOKEN":"t0ps3cret"}`), b)
	if err != nil {
		fmt.Println(err)
		return
	}
	config, err := keeper.Open(ctx, sealed, b)
	fmt.Println(string(config), err)

	b.Attempt = 2
	_, err = keeper.Open(ctx, sealed, b)
	fmt.Println(errors.Is(err, envelope.ErrAuth))
	// Output:
	// {"API_TOKEN":"t0ps3cret"} <nil>
	// true
}

// Rotation: add the new key, make it primary, keep the old one until its
// runs are gone, then remove it.
func ExampleKeyring() {
	oldKEK, _ := localkey.New(make([]byte, localkey.KeyBytes))
	newKEK, _ := localkey.New(append(make([]byte, localkey.KeyBytes-1), 1))
	ring, _ := envelope.NewKeyring("key-2025", oldKEK)
	keeper := envelope.New(ring, nil)
	ctx := context.Background()
	b := envelope.Binding{RunID: "r1", InvocationVersion: sortie.InvocationVersion, Purpose: envelope.PurposeAtRest, Agent: "probe"}
	old, _ := keeper.Seal(ctx, []byte("{}"), b)

	fmt.Println(ring.Add("key-2026", newKEK))
	fmt.Println(ring.SetPrimary("key-2026"))
	_, err := keeper.Open(ctx, old, b)
	fmt.Println("old envelope opens:", err == nil)
	fmt.Println(ring.Remove("key-2025"))
	_, err = keeper.Open(ctx, old, b)
	fmt.Println(err)
	// Output:
	// <nil>
	// <nil>
	// old envelope opens: true
	// <nil>
	// open envelope: key ID "key-2025" is not in the keyring (it holds "key-2026"): key ID not in the keyring
}
