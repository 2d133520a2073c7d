package push

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/sortie-run/sortie"
)

// EventRunUpdated is the type of every webhook message the dispatcher
// sends.
const EventRunUpdated = "sortie.run.updated"

// Payload is the JSON body of a webhook message:
//
//	{"type": "sortie.run.updated", "timestamp_ms": 1767225600000, "data": {"run": {...}}}
type Payload struct {
	// Type is [EventRunUpdated].
	Type string `json:"type"`
	// TimestampMs is when the message was sent, Unix ms.
	TimestampMs int64 `json:"timestamp_ms"`
	// Data holds the run.
	Data PayloadData `json:"data"`
}

// PayloadData is the data of a [Payload].
type PayloadData struct {
	// Run is the run's current state as [PublicRun] shows it.
	Run *sortie.Run `json:"run"`
}

// PublicRun returns a copy of r without what only the host and its workers
// may see: the sealed configuration, the request hash, the resume input,
// the interrupt's checkpoint (and their payload references), the attempts' launch IDs and, for attempts
// on the local launcher, the host's process ID, command and log path and
// the claim owner (host name and PID; shown as "local").
// Those fields are omitted from its JSON: a launch ID fences the
// attempt's reports, so only the host and the attempt's worker hold it. r is not changed; the view shares the parts it keeps with r
// (labels, variables, result, errors): read it, never change it. The host
// API shows runs the same way.
func PublicRun(r *sortie.Run) *sortie.Run {
	p := *r
	p.SealedConfig, p.RequestHash, p.ResumeInput, p.ResumeInputRef = nil, "", nil, nil
	p.Steps = sortie.PublicSteps(r.Steps)
	if r.Interrupt != nil {
		i := *r.Interrupt
		i.Checkpoint, i.CheckpointRef = nil, nil
		p.Interrupt = &i
	}
	if r.Attempts != nil {
		p.Attempts = make([]sortie.Attempt, len(r.Attempts))
		for i, a := range r.Attempts {
			a.LaunchID = ""
			if a.Ref != nil && a.Ref.Provider == "local" {
				// the host's process ID, command and log path, and the claim
				// owner's host name and PID: nothing for clients
				a.Ref = &sortie.Ref{Provider: a.Ref.Provider, RunID: a.Ref.RunID, Attempt: a.Ref.Attempt}
				a.Owner = "local"
			}
			p.Attempts[i] = a
		}
	}
	return &p
}

// MessageID returns the webhook-id of the delivery of version of run to
// the push configuration configID: "msg_" and 32 hex digits of a SHA-256
// of the three. It is the same on every redelivery, by any host, so a
// receiver drops duplicates of an at-least-once delivery by it.
func MessageID(run sortie.RunID, configID string, version int64) string {
	h := sha256.New()
	h.Write([]byte(run))
	h.Write([]byte{0})
	h.Write([]byte(configID))
	h.Write([]byte{0})
	h.Write([]byte(strconv.FormatInt(version, 10)))
	return "msg_" + hex.EncodeToString(h.Sum(nil)[:16])
}

// encode returns the webhook body for the public view pub sent at nowMs.
func encode(pub *sortie.Run, nowMs int64) ([]byte, error) {
	b, err := json.Marshal(Payload{Type: EventRunUpdated, TimestampMs: nowMs, Data: PayloadData{Run: pub}})
	if err != nil {
		return nil, fmt.Errorf("push: encode run %s version %d: %w", pub.ID, pub.Version, err)
	}
	return b, nil
}

// fingerprint hashes what a receiver sees of a change: the public view
// without the version, the update time and the lease, which a heartbeat
// alone moves.
func fingerprint(pub *sortie.Run) [32]byte {
	c := *pub
	c.Version, c.UpdatedMs, c.LeaseExpiresMs = 0, 0, 0
	b, err := json.Marshal(&c)
	if err != nil { // a Run always marshals; a unique value forces a delivery
		return sha256.Sum256([]byte(err.Error() + strconv.FormatInt(pub.Version, 10)))
	}
	return sha256.Sum256(b)
}
