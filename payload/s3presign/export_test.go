package s3presign

import "time"

// SetNow makes s sign at the times now returns.
func SetNow(s *Signer, now func() time.Time) { s.now = now }
