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
	setEnded    bool
	endedPK     string
	ended       int64
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
	if r.State.Terminal() && (valS(old, AttrEndedPK) == "" || valN(old, AttrEnded) != r.UpdatedMs) {
		k.setEnded, k.endedPK, k.ended = true, EndedPartition(shardOf(r.ID)), r.UpdatedMs
		k.units += keyUnits(valS(old, AttrEndedPK) != "", true, true)
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
	if k.setEnded {
		it[AttrEndedPK], it[AttrEnded] = attrS(k.endedPK), attrN(k.ended)
	}
	return it
}

// expression returns the update expression's part for the key changes
// (", #ls = :ls ..." and " REMOVE #sp", last), adding its names and values.
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
	if k.setEnded {
		names["#ep"], names["#ek"] = AttrEndedPK, AttrEnded
		values[":ep"], values[":ek"] = attrS(k.endedPK), attrN(k.ended)
		expr += ", #ep = :ep, #ek = :ek"
	}
	if k.removeState {
		names["#sp"] = AttrStatePK
		expr += " REMOVE #sp"
	}
	return expr
}
