package dynamo

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/sortie-run/sortie"
)

// Sort keys of a run's push items: the counter, and the prefix of each
// configuration's key. Both sort between the event batches (EVT#…) and the
// run item (RUN), so one Query of [pushSKLow, runSK] reads the counter,
// the configurations and the run.
const (
	pushCountSK = "PUSH"
	pushSKLow   = pushCountSK
	pushPrefix  = "PUSH#"
)

// Attributes of a push configuration item, beside [AttrURL] and the others
// of the table's list; both are absent when empty.
const (
	AttrFormat      = "fmt" // S: push config: Format, absent when empty
	AttrSealedToken = "stk" // B: push config: SealedToken (opaque JSON bytes), absent when empty
	AttrLeaseOwner  = "lo"  // S: push config: the delivery lease's owner, absent without a lease
	AttrLeaseUntil  = "lu"  // N: push config: the delivery lease's end, Unix ms
)

func pushSK(id string) string { return pushPrefix + id }

func pushKey(run sortie.RunID, id string) item { return keyOf(runPK(run), pushSK(id)) }

func pushCountKey(run sortie.RunID) item { return keyOf(runPK(run), pushCountSK) }

// newPushItem returns the item of a new configuration: no delivery progress
// yet, so it is in the push index at once.
func newPushItem(cfg *sortie.PushConfig, nowMs int64) item {
	it := pushKey(cfg.RunID, cfg.ID)
	it[AttrURL] = attrS(cfg.URL)
	if cfg.KeyID != "" {
		it[AttrKeyID] = attrS(cfg.KeyID)
	}
	if cfg.Format != "" {
		it[AttrFormat] = attrS(cfg.Format)
	}
	if len(cfg.SealedToken) > 0 {
		it[AttrSealedToken] = attrB(cfg.SealedToken)
	}
	it[AttrCreatedMs] = attrN(nowMs)
	it[AttrDelivered] = attrN(0)
	it[AttrFailures] = attrN(0)
	it[AttrPushDue] = attrN(0)
	it[AttrPushPK] = attrS(PushPartition)
	return it
}

// decodePush reads a configuration item; Done is the absence of the push
// index partition.
func decodePush(it item) (*sortie.PushConfig, error) {
	pk, sk := valS(it, AttrPK), valS(it, AttrSK)
	run, ok1 := strings.CutPrefix(pk, "RUN#")
	id, ok2 := strings.CutPrefix(sk, pushPrefix)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("decode push config item %s %s: not a push config key", pk, sk)
	}
	_, pending := it[AttrPushPK]
	var tok []byte
	if b := valB(it, AttrSealedToken); len(b) > 0 {
		tok = bytes.Clone(b)
	}
	return &sortie.PushConfig{
		RunID: sortie.RunID(run), ID: id, URL: valS(it, AttrURL), KeyID: valS(it, AttrKeyID),
		Format: valS(it, AttrFormat), SealedToken: tok, CreatedMs: valN(it, AttrCreatedMs),
		Delivery: sortie.PushDelivery{
			DeliveredVersion: valN(it, AttrDelivered), Failures: int(valN(it, AttrFailures)),
			NextAttemptMs: valN(it, AttrPushDue), LastError: valS(it, AttrLastError), Done: !pending,
		},
	}, nil
}

// replaceUpdate returns the update expression, names and values that set
// the fields a client sets of cfg (URL, KeyID, Format, SealedToken),
// removing those that are empty.
func replaceUpdate(cfg *sortie.PushConfig) (string, map[string]string, item) {
	names := map[string]string{"#pk": AttrPK, "#u": AttrURL}
	values := item{":u": attrS(cfg.URL)}
	set, remove := []string{"#u = :u"}, []string{}
	for _, f := range []struct {
		name, attr string
		v          types.AttributeValue
		empty      bool
	}{
		{"#kid", AttrKeyID, attrS(cfg.KeyID), cfg.KeyID == ""},
		{"#fmt", AttrFormat, attrS(cfg.Format), cfg.Format == ""},
		{"#stk", AttrSealedToken, attrB(cfg.SealedToken), len(cfg.SealedToken) == 0},
	} {
		names[f.name] = f.attr
		if f.empty {
			remove = append(remove, f.name)
			continue
		}
		ph := ":" + f.name[1:]
		set, values[ph] = append(set, f.name+" = "+ph), f.v
	}
	expr := "SET " + strings.Join(set, ", ")
	if len(remove) > 0 {
		expr += " REMOVE " + strings.Join(remove, ", ")
	}
	return expr, names, values
}

// deliveryUpdate returns the update expression, names and values that
// store d, except DeliveredVersion when withVersion is false. A done
// configuration leaves the push index.
func deliveryUpdate(d sortie.PushDelivery, withVersion bool) (string, map[string]string, item) {
	names := map[string]string{"#pk": AttrPK, "#fl": AttrFailures, "#pd": AttrPushDue, "#le": AttrLastError, "#pp": AttrPushPK}
	values := item{":fl": attrN(int64(d.Failures)), ":pd": attrN(d.NextAttemptMs)}
	set, remove := []string{"#fl = :fl", "#pd = :pd"}, []string{}
	if withVersion {
		names["#dv"], values[":dv"] = AttrDelivered, attrN(d.DeliveredVersion)
		set = append(set, "#dv = :dv")
	}
	if d.LastError != "" {
		set, values[":le"] = append(set, "#le = :le"), attrS(d.LastError)
	} else {
		remove = append(remove, "#le")
	}
	if !d.Done {
		set, values[":pp"] = append(set, "#pp = :pp"), attrS(PushPartition)
	} else {
		remove = append(remove, "#pp")
	}
	expr := "SET " + strings.Join(set, ", ")
	if len(remove) > 0 {
		expr += " REMOVE " + strings.Join(remove, ", ")
	}
	return expr, names, values
}

// canceledBy reports whether err is a canceled transaction whose item i
// failed its condition (and not a transaction conflict).
func canceledBy(err error, i int) bool {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return false
	}
	code, _ := reason(tce, i)
	return code == reasonConditionFailed
}

// transactionConflict reports whether err is a transaction canceled by a
// concurrent write of one of its items: trying again may succeed.
func transactionConflict(err error) bool {
	var tce *types.TransactionCanceledException
	var tc *types.TransactionConflictException
	return (errors.As(err, &tce) && hasReason(tce, reasonConflict)) || errors.As(err, &tc)
}
