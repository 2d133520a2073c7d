package controlplane

import (
	"fmt"

	"github.com/sortie-run/sortie"
)

// Deletable returns nil when run r may be deleted (it is terminal), and
// otherwise an error wrapping sortie.ErrConflict that names its state.
func Deletable(r *sortie.Run) error {
	if r.State.Terminal() {
		return nil
	}
	return fmt.Errorf("run %s is %s, not terminal: cancel it first: %w", r.ID, r.State, sortie.ErrConflict)
}
