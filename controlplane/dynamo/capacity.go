package dynamo

import (
	"context"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/sortie-run/sortie"
)

// Capacity is DynamoDB capacity in request units: read units (a strongly
// consistent read of up to 4 KB is one) and write units (a write of up to
// 1 KB is one, a transactional write two), table and indexes together.
type Capacity struct {
	ReadUnits  float64 `json:"r,omitempty"`
	WriteUnits float64 `json:"w,omitempty"`
}

func (c Capacity) plus(o Capacity) Capacity {
	return Capacity{ReadUnits: c.ReadUnits + o.ReadUnits, WriteUnits: c.WriteUnits + o.WriteUnits}
}

func (c Capacity) minus(o Capacity) Capacity {
	return Capacity{ReadUnits: c.ReadUnits - o.ReadUnits, WriteUnits: c.WriteUnits - o.WriteUnits}
}

// Consumed is what one [ControlPlane] handle consumed, as DynamoDB reported
// it (ReturnConsumedCapacity INDEXES): the ground truth for cost
// measurements.
type Consumed struct {
	// Requests counts DynamoDB API calls, including failed ones.
	Requests int64
	// Capacity is table and indexes together.
	Capacity
	// IndexWriteUnits is the part of WriteUnits spent on index entries.
	IndexWriteUnits float64
	// Retries counts calls sent again after a transient failure, beyond
	// the SDK's own retries; Throttles and TransactionConflicts count the
	// failures among them that were throttling and transaction conflicts.
	Retries, Throttles, TransactionConflicts int64
	// ConsistentReads counts the strongly consistent GetItem calls made
	// because a lost condition came back without the item that won
	// (ReturnValuesOnConditionCheckFailure is not always honoured).
	ConsistentReads int64
}

// maxPending bounds the runs with unrecorded units a handle keeps; past it
// the pending units are dropped (they are recorded at a run's next write
// through the same handle, which may never come).
const maxPending = 10_000

// ledger counts the capacity a handle consumed and keeps, per run, the
// units not yet recorded on the run item.
type ledger struct {
	mu      sync.Mutex
	total   Consumed
	pending map[sortie.RunID]Capacity
}

// sum adds DynamoDB's reports of one call: table and indexes.
func sum(cc ...types.ConsumedCapacity) float64 {
	var n float64
	for _, c := range cc {
		if c.CapacityUnits != nil {
			n += *c.CapacityUnits
		}
	}
	return n
}

// wrote returns the write units DynamoDB reported for one write and counts
// their index part.
func (l *ledger) wrote(cc ...types.ConsumedCapacity) Capacity {
	l.indexWrites(cc...)
	return Capacity{WriteUnits: sum(cc...)}
}

// indexWrites adds the index part of DynamoDB's reports of one write.
func (l *ledger) indexWrites(cc ...types.ConsumedCapacity) {
	var n float64
	for _, c := range cc {
		for _, ix := range c.GlobalSecondaryIndexes {
			if ix.CapacityUnits != nil {
				n += *ix.CapacityUnits
			}
		}
	}
	l.mu.Lock()
	l.total.IndexWriteUnits += n
	l.mu.Unlock()
}

// call counts one request and, when id is set, keeps its units (read or
// write as reported) pending for run id.
func (l *ledger) call(id sortie.RunID, used Capacity) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total.Requests++
	l.total.Capacity = l.total.plus(used)
	if id != "" {
		l.addLocked(id, used)
	}
}

func (l *ledger) addLocked(id sortie.RunID, c Capacity) {
	if c == (Capacity{}) {
		return
	}
	if l.pending == nil || len(l.pending) >= maxPending {
		l.pending = make(map[sortie.RunID]Capacity)
	}
	l.pending[id] = l.pending[id].plus(c)
}

// correct keeps the difference between reported and recorded units of a
// write pending for run id.
func (l *ledger) correct(id sortie.RunID, reported, recorded Capacity) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.addLocked(id, reported.minus(recorded))
}

// take removes and returns the units pending for run id.
func (l *ledger) take(id sortie.RunID) Capacity {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.pending[id]
	delete(l.pending, id)
	return c
}

// putBack returns units taken for a write that did not happen.
func (l *ledger) putBack(id sortie.RunID, c Capacity) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.addLocked(id, c)
}

// retry counts a call sent again after the transient failure err.
func (l *ledger) retry(err error) {
	countRetry(err)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total.Retries++
	switch {
	case throttled(err):
		l.total.Throttles++
	case transactionConflict(err):
		l.total.TransactionConflicts++
	}
}

// fallback counts a consistent read made for a lost condition's missing item.
func (l *ledger) fallback() {
	fallbackCount.Add(context.Background(), 1)
	l.mu.Lock()
	l.total.ConsistentReads++
	l.mu.Unlock()
}

func (l *ledger) consumed() Consumed {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// settle puts the units recorded since the last settlement on every attempt
// that ended in this write (ended now, live in before).
func settle(rec *record, before []bool) {
	for i := range rec.Run.Attempts {
		a := &rec.Run.Attempts[i]
		if !a.Ended() || (i < len(before) && before[i]) {
			continue
		}
		due := rec.Units.minus(rec.Settled)
		u := sortie.Usage{}
		if a.Usage != nil {
			u = *a.Usage // the outcome's Usage belongs to the caller
		}
		a.Usage = &u
		a.Usage.ReadUnits += due.ReadUnits
		a.Usage.WriteUnits += due.WriteUnits
		rec.Settled = rec.Units
	}
}

// endedFlags returns which attempts of r have ended.
func endedFlags(r *sortie.Run) []bool {
	out := make([]bool, len(r.Attempts))
	for i := range r.Attempts {
		out[i] = r.Attempts[i].Ended()
	}
	return out
}
