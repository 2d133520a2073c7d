package payload_test

import (
	"context"
	"fmt"
	"os"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/envelope"
	"github.com/sortie-run/sortie/crypto/localkey"
	"github.com/sortie-run/sortie/payload"
)

func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "payloads")
	defer os.RemoveAll(dir)
	kek, _ := localkey.New(make([]byte, localkey.KeyBytes)) // a real key comes from the state directory or KMS
	ring, _ := envelope.NewKeyring("local-1", kek)
	store, bucket, err := payload.OpenFile(dir, envelope.NewConfig(envelope.New(ring, nil)), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer bucket.Close()
	run := sortie.RunID("01JRUN0000000000000000000A")
	ref, err := store.Put(ctx, run, "probe", "variables", "variables", []byte(`{"doc":"a long transcript"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	value, err := store.Get(ctx, run, "probe", ref)
	fmt.Println(ref.Store, ref.Key, ref.Size, string(value), err)
	// Output: file runs/01JRUN0000000000000000000A/variables 27 {"doc":"a long transcript"} <nil>
}
