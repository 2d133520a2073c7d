package dynamo

import (
	"bytes"
	"compress/flate"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/sortie-run/sortie"
)

// item is one DynamoDB item.
type item = map[string]types.AttributeValue

// record is what a run item's body holds: the run, the capacity recorded
// for it and, for each attempt that ended after it was claimed, the last
// event seq stored before it ended (later batches of a stale worker are
// not part of the run).
type record struct {
	Run *sortie.Run `json:"run"`
	// Units is all capacity recorded for the run; Settled is the part
	// already put on ended attempts' Usage.
	Units   Capacity         `json:"u,omitzero"`
	Settled Capacity         `json:"s,omitzero"`
	Ends    map[string]int64 `json:"e,omitempty"`
}

// end returns the last visible seq of an ended attempt, or -1 when the
// attempt has no recorded end.
func (r *record) end(attempt int) int64 {
	if e, ok := r.Ends[strconv.Itoa(attempt)]; ok {
		return e
	}
	return -1
}

func runPK(id sortie.RunID) string { return "RUN#" + string(id) }

// shardOf is the index shard of run id: FNV-1a of the ID modulo
// [IndexShards].
func shardOf(id sortie.RunID) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % IndexShards)
}

const runSK = "RUN"

// eventSK is the sort key of the event batch whose first event is seq:
// zero-padded so string order is numeric order.
func eventSK(attempt int, seq int64) string { return fmt.Sprintf("EVT#%04d#%010d", attempt, seq) }

// createdKey is the list sort key: created_ms zero-padded, then the ID.
func createdKey(createdMs int64, id sortie.RunID) string {
	return fmt.Sprintf("%015d#%s", createdMs, id)
}

// idemPK is the idempotency record's key. Scope and key are written as
// length-prefixed text when they are valid UTF-8, in hex otherwise, so no
// two (scope, key) pairs share a record.
func idemPK(scope, key string) string {
	if utf8.ValidString(scope) && utf8.ValidString(key) {
		return fmt.Sprintf("IDEM#%d#%s#%s", len(scope), scope, key)
	}
	return "IDEMX#" + hex.EncodeToString([]byte(scope)) + "#" + hex.EncodeToString([]byte(key))
}

const idemSK = "IDEM"

func attrS(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func attrN(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}
func attrB(v []byte) types.AttributeValue { return &types.AttributeValueMemberB{Value: v} }
func keyOf(pk, sk string) item            { return item{AttrPK: attrS(pk), AttrSK: attrS(sk)} }
func runKey(id sortie.RunID) item         { return keyOf(runPK(id), runSK) }
func valS(it item, name string) string {
	s, _ := it[name].(*types.AttributeValueMemberS)
	return strVal(s)
}
func strVal(s *types.AttributeValueMemberS) string {
	if s == nil {
		return ""
	}
	return s.Value
}

// valN returns the integer attribute name of it, 0 when absent.
func valN(it item, name string) int64 {
	n, ok := it[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0
	}
	v, _ := strconv.ParseInt(n.Value, 10, 64)
	return v
}

func valB(it item, name string) []byte {
	b, _ := it[name].(*types.AttributeValueMemberB)
	if b == nil {
		return nil
	}
	return b.Value
}

// bodyFormat is the first byte of every body: deflate-compressed JSON.
const bodyFormat = 1

// encodeBody compresses the JSON of v.
func encodeBody(v any) ([]byte, error) {
	js, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.WriteByte(bodyFormat)
	w, _ := flate.NewWriter(&buf, flate.BestCompression) // the level is valid
	w.Write(js)
	w.Close()
	return buf.Bytes(), nil
}

// decodeBody decodes a body made by encodeBody into v.
func decodeBody(b []byte, v any) error {
	if len(b) == 0 || b[0] != bodyFormat {
		return errors.New("stored body has an unknown format")
	}
	js, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(b[1:])), 16<<20))
	if err != nil {
		return fmt.Errorf("inflate stored body: %w", err)
	}
	return json.Unmarshal(js, v)
}

// decodeRecord decodes a run item.
func decodeRecord(it item) (*record, error) {
	var rec record
	if err := decodeBody(valB(it, AttrBody), &rec); err != nil || rec.Run == nil {
		return nil, fmt.Errorf("decode run item %s: %v", valS(it, AttrPK), err)
	}
	return &rec, nil
}

// itemSize returns the size DynamoDB bills an item at: names plus values
// (strings and binaries at their length, numbers at one byte per two
// significant digits plus one).
func itemSize(it item) int {
	n := 0
	for name, v := range it {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return numberSize(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	}
	return 0 // this package stores no other types
}

func numberSize(s string) int {
	digits := strings.Trim(strings.NewReplacer("-", "", ".", "").Replace(s), "0")
	return (len(digits)+1)/2 + 1
}

// writeUnits is what a standard write of an item of size bytes costs: one
// unit per KB, rounded up, at least one.
func writeUnits(size int) float64 { return float64(max(1, (size+1023)/1024)) }
