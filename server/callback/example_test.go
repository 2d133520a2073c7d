package callback_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/memory"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/launchers/local"
	"github.com/sortie-run/sortie/server/callback"
)

// A host that sends its workers' reports over HTTPS: the engine's
// ReportIssuer gives each attempt a callback URL and token, the handler
// serves the callback routes, and the worker picks its reporter with
// functions.NewReporter.
func Example() {
	ctx := context.Background()
	cp := memory.New()
	defer cp.Close()

	key, err := callback.NewKey("k1") // hosts load theirs with ParseKeyring
	if err != nil {
		log.Fatal(err)
	}
	keys, _ := callback.NewKeyring(key)
	handler, err := callback.NewHandler(cp, keys, nil)
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(callback.PathPrefix+"/", handler)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	issuer, err := callback.NewIssuer(keys, srv.URL, nil)
	if err != nil {
		log.Fatal(err)
	}

	reg := functions.NewRegistry()
	reg.Register("count", func(ctx context.Context, call *functions.Call) (any, error) {
		if err := call.Emit("progress", "counting words", nil); err != nil {
			return nil, err
		}
		return map[string]int{"words": 42}, nil
	})
	worker := &functions.Worker{Registry: reg}
	launcher, err := local.New(&local.Options{InProcess: func(ctx context.Context, inv *sortie.Invocation) error {
		rep, err := functions.NewReporter(inv, nil, "", nil) // no control plane here: callbacks only
		if err != nil {
			return err
		}
		_, err = worker.Execute(ctx, inv, rep)
		return err
	}})
	if err != nil {
		log.Fatal(err)
	}
	defer launcher.Close()
	engine := sortie.NewEngine(cp, launcher, sortie.Agents{"count": {Name: "count", Runtime: "go:count"}},
		&sortie.EngineOptions{ReportIssuer: issuer})
	defer engine.Close()

	client := sortie.NewClient(engine, nil)
	run, err := client.Submit(ctx, &sortie.SubmitRequest{Agent: "count"})
	if err != nil {
		log.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if run, err = client.Wait(wctx, run.ID); err != nil {
		log.Fatal(err)
	}
	evs, _ := cp.Events(ctx, run.ID, sortie.Cursor{}, 10)
	fmt.Println(run.State, string(run.Result), "claimed by", run.Current().Owner)
	fmt.Println(evs[0].Cursor(), evs[0].Text)
	// Output:
	// completed {"words":42} claimed by callback
	// 1.1 counting words
}
