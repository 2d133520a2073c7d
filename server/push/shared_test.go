package push_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
)

// Three hosts sharing one store (each its own dispatcher, sweeping every
// 5 ms, all notified of every change) deliver each version of each run to
// a slow receiver once: the delivery lease lets one host deliver at a
// time, and the next host to take it sees the version recorded.
func TestHostsSharingAStoreDeliverEachVersionOnce(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t, e.secrets["primary"], nil, func(int64, *http.Request) int {
		time.Sleep(20 * time.Millisecond) // a slow receiver widens the race the lease closes
		return http.StatusNoContent
	})
	var hosts []*host
	for i := range 3 {
		opts := testOptions()
		opts.Owner = fmt.Sprint("host-", i)
		hosts = append(hosts, e.start(nil, opts))
	}
	notify := func(id sortie.RunID) {
		for _, h := range hosts {
			h.d.Notify(id)
		}
	}
	var runs []*sortie.Run
	for range 8 {
		run := e.submit(nil)
		e.put(run.ID, "hook", rc.url("/hook"), "")
		notify(run.ID)
		c := e.launch(run.ID)
		notify(run.ID)
		runs = append(runs, e.finish(c, sortie.Outcome{Result: json.RawMessage(`1`)}))
		notify(run.ID)
	}
	for _, r := range runs {
		e.waitCfg(r.ID, "hook", "done", func(d sortie.PushDelivery) bool { return d.Done })
	}
	seen := map[string]int{}
	for _, req := range rc.requests() {
		seen[req.ID]++
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("message %s delivered %d times by the three hosts, want once", id, n)
		}
	}
	if len(seen) < len(runs) {
		t.Errorf("%d messages delivered for %d runs, want at least the terminal version of each", len(seen), len(runs))
	}
}
