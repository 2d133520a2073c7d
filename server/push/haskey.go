package push

// HasKey reports whether the dispatcher signs with the key ID ("" names
// the primary key), so a configuration naming an unknown key can be
// refused when it is set instead of failing at its first delivery.
func (d *Dispatcher) HasKey(id string) bool {
	if id == "" {
		return true
	}
	_, ok := d.keys.Signers[id]
	return ok
}
