package controlplane

import (
	"github.com/sortie-run/sortie"
)

// Deletable returns nil when run r may be deleted (it is terminal), and
// otherwise a [*sortie.LiveRunError] (it matches sortie.ErrConflict).
func Deletable(r *sortie.Run) error {
	if r.State.Terminal() {
		return nil
	}
	return &sortie.LiveRunError{ID: r.ID, State: r.State}
}
