package dynamo

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/testwait"
)

// gateAPI is a client whose GetItem calls wait for release, counting how
// many are in flight at once.
type gateAPI struct {
	API
	release        chan struct{}
	inFlight, peak atomic.Int64
	calls          atomic.Int64
}

func (g *gateAPI) GetItem(ctx context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	g.calls.Add(1)
	n := g.inFlight.Add(1)
	for p := g.peak.Load(); n > p && !g.peak.CompareAndSwap(p, n); p = g.peak.Load() {
	}
	<-g.release
	g.inFlight.Add(-1)
	return &dynamodb.GetItemOutput{}, nil
}

// Calls of contexts marked by sortie.LivenessContext go to the liveness
// client, even while the other client has MaxInFlight calls in flight and
// more waiting; those others never exceed the bound.
func TestLivenessCallsPassAQueueOfOthers(t *testing.T) {
	normal, live := &gateAPI{release: make(chan struct{})}, &gateAPI{release: make(chan struct{})}
	close(live.release)
	p := byPriority{normal: normal, liveness: live, slots: make(chan struct{}, 2)}
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() { _, _ = p.GetItem(context.Background(), &dynamodb.GetItemInput{}) })
	}
	testwait.Until(t, "2 normal calls in flight", 10*time.Second, func() bool { return normal.inFlight.Load() == 2 })
	if _, err := p.GetItem(sortie.LivenessContext(context.Background()), &dynamodb.GetItemInput{}); err != nil || live.calls.Load() != 1 {
		t.Errorf("liveness GetItem with the normal client full = %v, %d liveness calls; want it through the liveness client", err, live.calls.Load())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := p.GetItem(ctx, &dynamodb.GetItemInput{}); err == nil || ctx.Err() == nil {
		t.Errorf("normal GetItem whose context ends while it waits = %v, want the context's error", err)
	}
	close(normal.release)
	wg.Wait()
	if peak, calls := normal.peak.Load(), normal.calls.Load(); peak != 2 || calls != 5 {
		t.Errorf("normal client: peak %d in flight, %d calls; want 2 (MaxInFlight) and 5", peak, calls)
	}
}
