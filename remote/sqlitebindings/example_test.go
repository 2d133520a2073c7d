package sqlitebindings_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sortie-run/sortie/remote"
	"github.com/sortie-run/sortie/remote/sqlitebindings"
)

// A caller keeps the bindings of its remote calls in a file, so after a
// restart it finds the tasks it started.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "bindings")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	store, err := sqlitebindings.Open(filepath.Join(dir, "bindings.db"), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	ctx := context.Background()
	_ = store.PutBinding(ctx, &remote.BindingRecord{Node: "summarise", Key: "order-17",
		AgentURL: "https://agents.example/a2a", TaskID: "task-1"})
	recs, _ := store.ListBindings(ctx, "summarise")
	for _, r := range recs {
		fmt.Println(r.Key, r.TaskID)
	}
	// Output:
	// order-17 task-1
}
