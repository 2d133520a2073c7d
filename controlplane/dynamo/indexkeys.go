package dynamo

import (
	"maps"

	"github.com/sortie-run/sortie"
)

// indexKeys is how one write of a run changes its lease and state index
// keys, and what that costs in index writes.
type indexKeys struct {
	setLease    bool
	leasePK     string
	lease       int64
	setState    bool
	removeState bool
	statePK     string
	units       float64
}

// indexChanges returns the index key changes of a write of run r over the
// stored item old, whose run was due at prevDue (0: nothing due).
func indexChanges(old item, prevDue int64, r *sortie.Run) indexKeys {
	var k indexKeys
	oldKey := valN(old, AttrLease)
	if key := nextLeaseKey(oldKey, prevDue, leaseDue(r)); key != oldKey {
		k.setLease, k.leasePK, k.lease = true, LeasePartition(shardOf(r.ID)), key
		k.units += keyUnits(oldKey != 0, true, true)
	}
	if oldSP, newSP := valS(old, AttrStatePK), statePK(r); oldSP != newSP {
		k.statePK, k.setState, k.removeState = newSP, newSP != "", newSP == ""
		k.units += keyUnits(oldSP != "", newSP != "", true)
	}
	return k
}

// apply returns it with the run attributes set and the key changes made.
func (k indexKeys) apply(it, set item) item {
	maps.Copy(it, set)
	if k.setLease {
		it[AttrLeasePK], it[AttrLease] = attrS(k.leasePK), attrN(k.lease)
	}
	if k.setState {
		it[AttrStatePK] = attrS(k.statePK)
	}
	if k.removeState {
		delete(it, AttrStatePK)
	}
	return it
}

// expression returns the update expression's part for the key changes
// (", #ls = :ls ..." and " REMOVE #sp"), adding its names and values.
func (k indexKeys) expression(names map[string]string, values item) string {
	expr := ""
	if k.setLease {
		names["#ls"], names["#lk"] = AttrLeasePK, AttrLease
		values[":ls"], values[":lk"] = attrS(k.leasePK), attrN(k.lease)
		expr += ", #ls = :ls, #lk = :lk"
	}
	if k.setState {
		names["#sp"], values[":sp"] = AttrStatePK, attrS(k.statePK)
		expr += ", #sp = :sp"
	}
	if k.removeState {
		names["#sp"] = AttrStatePK
		expr += " REMOVE #sp"
	}
	return expr
}
